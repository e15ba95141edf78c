"""``memarch ui``: start the MLflow UI on the search's tracking store and print its URL."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

HELP = "start the MLflow UI on the tracking store (prints the URL and the command)"


def add_arguments(p) -> None:
    from memarch.optimizers.tracking import DEFAULT_TRACKING_URI

    p.add_argument("--tracking-uri", default=DEFAULT_TRACKING_URI, help=f"MLflow store (default {DEFAULT_TRACKING_URI})")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=5000)
    p.add_argument("--print-only", action="store_true", help="print the command and URL, do not start")


def run(args) -> int:
    from memarch.errors import MemarchError
    from memarch.optimizers.tracking import ui_command

    uri = args.tracking_uri
    if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///"):]).exists():
        raise MemarchError(f"no MLflow store at {uri}: run `memarch compile` or `memarch compare` first")
    print(f"MLflow UI: http://{args.host}:{args.port}")
    print(f"command:   {ui_command(uri, args.port)} --host {args.host}")
    if args.print_only:
        return 0
    exe = Path(sys.executable).with_name("mlflow")
    cmd = [str(exe) if exe.exists() else (shutil.which("mlflow") or "mlflow"), "ui",
           "--backend-store-uri", uri, "--host", args.host, "--port", str(args.port)]
    # Offline: keep litellm (imported by MLflow's UI) from fetching its model cost map.
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the cleanup below on SIGTERM too
    child = subprocess.Popen(cmd, env=env)
    try:
        return child.wait()
    except KeyboardInterrupt:
        return 130
    finally:  # Ctrl-C, SIGTERM (via KeyboardInterrupt/SystemExit) or error: never leave the UI behind
        if child.poll() is None:
            child.terminate()
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()

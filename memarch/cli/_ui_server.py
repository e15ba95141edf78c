"""The MLflow UI server behind ``memarch ui``: started in its own process group with the background
job workers off unless asked for, polled until its page answers, stopped with all it spawned."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from memarch.errors import MemarchError

# MLflow's server starts its job runner (huey consumers, ~380 MB each) when this is true, its
# default; the runs view never needs it.
JOBS_ENV = "MLFLOW_SERVER_ENABLE_JOB_EXECUTION"


def free_port(host: str = "127.0.0.1") -> int:
    """A port the OS reports free on ``host`` now (another process may still take it first)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def server_command(tracking_uri: str, host: str, port: int, workers: int) -> list[str]:
    exe = Path(sys.executable).with_name("mlflow")
    return [str(exe) if exe.exists() else (shutil.which("mlflow") or "mlflow"), "ui",
            "--backend-store-uri", tracking_uri, "--host", host, "--port", str(port),
            "--workers", str(workers)]


def server_env(jobs: bool) -> dict[str, str]:
    # Offline: keep litellm (imported by MLflow's UI) from fetching its model cost map.
    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", JOBS_ENV: "true" if jobs else "false"}


class UIServer:
    """One ``mlflow ui`` process; ``ready_s`` is the time from start to the first answer of its page.

    Example::

        with UIServer("sqlite:///mlruns/mlflow.db", port=0) as ui:
            print(f"UI ready in {ui.ready_s:.1f} s at {ui.base_url}")

    Args:
        tracking_uri: the MLflow store to serve.
        host, port: where to listen; port 0 picks a free port.
        jobs: start MLflow's background job workers (off by default).
        workers: uvicorn worker processes (MLflow's default is 4; one serves one user).
        timeout: seconds to wait for the first answer before giving up.
        quiet: send the server's own log to /dev/null instead of this terminal.
    """

    def __init__(self, tracking_uri: str, *, host: str = "127.0.0.1", port: int = 5000, jobs: bool = False,
                 workers: int = 1, timeout: float = 300.0, quiet: bool = False):
        self.tracking_uri, self.host, self.jobs, self.workers = tracking_uri, host, jobs, workers
        self.port = port or free_port(host)
        self.timeout, self.quiet = timeout, quiet
        self.proc: subprocess.Popen | None = None
        self.ready_s: float | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def command(self) -> list[str]:
        return server_command(self.tracking_uri, self.host, self.port, self.workers)

    def start(self) -> float:
        """Start the server and wait for its page; returns (and keeps) the seconds that took."""
        out = subprocess.DEVNULL if self.quiet else None
        t0 = time.monotonic()
        # own process group: stop() reaches uvicorn's workers and the job runner too
        self.proc = subprocess.Popen(self.command, env=server_env(self.jobs), stdout=out, stderr=out,
                                     start_new_session=True)
        while True:
            if self.proc.poll() is not None:
                raise MemarchError(f"the MLflow UI exited with code {self.proc.returncode} before answering "
                                   f"(is port {self.port} in use? try --port 0)")
            if self._answers():
                self.ready_s = time.monotonic() - t0
                return self.ready_s
            if time.monotonic() - t0 > self.timeout:
                self.stop()
                raise MemarchError(f"the MLflow UI did not answer within {self.timeout:.0f} s (see its log above)")
            time.sleep(0.25)

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(self.base_url + "/", timeout=5) as resp:
                return resp.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def wait(self) -> int:
        return self.proc.wait() if self.proc else 0

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=10)
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            pass
        try:  # whatever of the group outlived the leader or ignored SIGTERM
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()

    def __enter__(self) -> "UIServer":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

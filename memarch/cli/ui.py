"""``memarch ui``: start the MLflow UI on the search's tracking store and print the URL of the
study's runs table (objective and cost columns), with the time the UI took to answer."""
from __future__ import annotations

import signal
import sys
from pathlib import Path

HELP = "start the MLflow UI on the study's runs (prints the runs URL and the time to first answer)"


def add_arguments(p) -> None:
    from memarch.optimizers.tracking.tracker import DEFAULT_TRACKING_URI, EXPERIMENT

    p.add_argument("--tracking-uri", default=DEFAULT_TRACKING_URI,
                   help=f"MLflow store (default {DEFAULT_TRACKING_URI})")
    p.add_argument("--experiment", default=EXPERIMENT, help=f"the experiment to open (default {EXPERIMENT})")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=5000, help="port to listen on; 0 picks a free one")
    p.add_argument("--jobs", action="store_true",
                   help="start MLflow's background job workers (off: the runs view does not use them)")
    p.add_argument("--workers", type=int, default=1, help="server worker processes (default 1; MLflow's is 4)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the UI to answer")
    p.add_argument("--print-only", action="store_true", help="print the command and URL, do not start")


def _open_view(uri: str, experiment: str) -> str | None:
    """Mark the experiment and store its runs view; its id, or None when the store has no such
    experiment yet."""
    from memarch.errors import MemarchError
    from memarch.optimizers.tracking.store_lock import store_lock
    from memarch.optimizers.tracking.ui_view import write_runs_view

    try:
        from mlflow.tracking import MlflowClient

        with store_lock(uri):  # a new store is created (migrated) by one process at a time
            client = MlflowClient(tracking_uri=uri)
            exp = client.get_experiment_by_name(experiment)
        if exp is None:
            return None
        write_runs_view(client, exp.experiment_id)
        return exp.experiment_id
    except Exception as exc:  # a store MLflow cannot open: one line, not a traceback
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise MemarchError(f"cannot open MLflow tracking store {uri}: {type(exc).__name__}: {first}") from None


def run(args) -> int:
    from memarch.cli._ui_server import UIServer
    from memarch.errors import MemarchError
    from memarch.optimizers.tracking.ui_view import runs_url

    uri = args.tracking_uri
    if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///"):]).exists():
        raise MemarchError(f"no MLflow store at {uri}: run `memarch compile` or `memarch compare` first")
    if args.port < 0 or args.workers < 1:
        raise MemarchError("--port must be >= 0 and --workers >= 1")
    experiment_id = _open_view(uri, args.experiment)
    server = UIServer(uri, host=args.host, port=args.port, jobs=args.jobs, workers=args.workers,
                      timeout=args.timeout)
    url = runs_url(server.base_url, experiment_id) if experiment_id else server.base_url
    if experiment_id is None:
        print(f"note: no experiment {args.experiment!r} in {uri} yet; opening the experiment list")
    print(f"MLflow UI: {url}", flush=True)
    print(f"command:   {' '.join(server.command)}"
          f"  ({'job workers on' if server.jobs else 'job workers off: --jobs turns them on'})", flush=True)
    if args.print_only:
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the cleanup below on SIGTERM too
    try:
        ready = server.start()
        print(f"UI ready in {ready:.1f} s: {url}", flush=True)
        return server.wait()
    except KeyboardInterrupt:
        return 130
    finally:  # Ctrl-C, SIGTERM (via SystemExit) or error: never leave the UI behind
        server.stop()

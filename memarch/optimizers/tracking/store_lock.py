"""`store_lock`: one process at a time creates or migrates an MLflow SQLite store. MLflow builds a new
database's tables and runs its migrations on the first request; two processes doing that at once
(`compare --workers 2`, two compiles started together) leave it half-migrated ("duplicate column name:
step", "table runs already exists", a missing alembic row) for good — a retry cannot repair it. Held
while a process opens the store the first time; a store another process already built is then only
read."""
from __future__ import annotations

import fcntl
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from memarch.pipeline import sqlite_wal

SQLITE = "sqlite:///"


def lock_path(tracking_uri: str) -> Path | None:
    """The lock file beside a SQLite store's database (None for any other store)."""
    if not tracking_uri.startswith(SQLITE):
        return None
    db = Path(tracking_uri[len(SQLITE):]).expanduser()
    return db.with_name(db.name + ".lock")


@contextmanager
def store_lock(tracking_uri: str) -> Iterator[None]:
    """Hold the store's exclusive lock (an advisory ``flock`` on ``<database>.lock``, released when the
    block ends or the process dies); no lock for a store that is not a SQLite file.

    Example::

        with store_lock("sqlite:///mlruns/mlflow.db"):
            client = MlflowClient("sqlite:///mlruns/mlflow.db")
            client.get_experiment_by_name("memarch")   # creates or migrates the tables, alone
    """
    path = lock_path(tracking_uri)
    if path is None:
        yield
        return
    sqlite_wal.install()  # the store's commits in WAL mode, without fsyncs (memarch/pipeline/sqlite_wal.py)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)

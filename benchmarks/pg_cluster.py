"""A throwaway PostgreSQL 15 cluster on loopback (Debian's binaries, which ``make install``
installs): for `bench_serve.py` and the tests (tests/postgres_helpers.py). Started as an
unprivileged user when run as root (initdb refuses root), trust auth, stopped and removed after."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def available() -> bool:
    return (PG_BIN / "initdb").exists()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running_postgres(max_connections: int = 200) -> Iterator[str]:
    """A fresh cluster with one database: yields ``postgresql://memarch@127.0.0.1:PORT/memarch``."""
    # Not a private temporary folder of root's: the server may run as another user.
    tmp_path = Path(tempfile.mkdtemp(prefix="memarch-pg-"))
    os.chmod(tmp_path, 0o755)
    data = tmp_path / "pg"
    run_as: list[str] = []
    if os.geteuid() == 0:
        user = "nobody"
        shutil.chown(tmp_path, user=user)
        run_as = ["runuser", "-u", user, "--"]
    subprocess.run(run_as + [str(PG_BIN / "initdb"), "-D", str(data), "-U", "memarch", "--auth=trust", "-E", "UTF8"],
                   check=True, capture_output=True)
    port = free_port()
    subprocess.run(run_as + [str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(tmp_path / "pg.log"), "-w",
                             "-o", f"-h 127.0.0.1 -p {port} -k {tmp_path} -c max_connections={max_connections}",
                             "start"], check=True, capture_output=True)
    try:
        subprocess.run(run_as + [str(PG_BIN / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "memarch",
                                 "memarch"], check=True, capture_output=True)
        yield f"postgresql://memarch@127.0.0.1:{port}/memarch"
    finally:
        subprocess.run(run_as + [str(PG_BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(tmp_path, ignore_errors=True)

"""The tests' throwaway PostgreSQL cluster: benchmarks/pg_cluster.py's, skipped (not failed) where
the binaries are missing."""
from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import pg_cluster  # noqa: E402


@contextmanager
def running_postgres() -> Iterator[str]:
    """``postgresql://memarch@127.0.0.1:PORT/memarch`` of a fresh cluster (pytest.skip without PostgreSQL)."""
    if not pg_cluster.available():
        pytest.skip(f"PostgreSQL binaries not found in {pg_cluster.PG_BIN} (make install installs Debian's postgresql)")
    with pg_cluster.running_postgres() as url:
        yield url

"""Fixtures of the app tests: the test module's ``ARCH`` saved as a program with the hash embedder."""
from __future__ import annotations

import pytest

from memarch.pipeline.program import MemoryProgram


@pytest.fixture
def program_file(request, tmp_path, hash_resources):
    """``tmp_path/program.json``: the module's ``ARCH`` as ``memarch compile --output`` writes it, minus a record."""
    path = tmp_path / "program.json"
    MemoryProgram(request.module.ARCH, resources=hash_resources).save(path, include_memory=False)
    return path


@pytest.fixture(scope="session")
def postgres_url():
    """One throwaway PostgreSQL cluster per test process (tests/postgres_helpers.py)."""
    from postgres_helpers import running_postgres

    with running_postgres() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def mem_path(request, tmp_path):
    """Where a `Memory` keeps its state, on each backend: a fresh directory (SQLite), or a fresh schema
    of the session's PostgreSQL cluster. The semantics tests run once on each (issue 34)."""
    if request.param == "sqlite":
        return tmp_path / "mem"
    import uuid

    return f"{request.getfixturevalue('postgres_url')}?schema=t_{uuid.uuid4().hex[:12]}"

"""Fixtures of the serving tests: a `Memory` on the module's ``ARCH`` (``program_file``,
tests/app/conftest.py) and a FastAPI test client of it."""
from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from memarch import Memory
from memarch.app.serve.http_api import create_app


@pytest.fixture
def memory(program_file, tmp_path):
    with Memory.load(program_file, path=tmp_path / "mem") as m:
        yield m


@pytest.fixture
def client(memory):
    with TestClient(create_app(memory)) as c:
        yield c

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

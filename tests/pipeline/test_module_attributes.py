"""`lean_getattribute`: memarch's modules read attributes without dspy's per-lookup check, and still
warn, as dspy does, when ``forward`` is called directly instead of through the module."""
from __future__ import annotations

import logging

import pytest

from memarch.pipeline.architecture import Architecture
from memarch.pipeline.embed import Embedder
from memarch.pipeline.program import MemoryProgram
from memarch.pipeline.resources import Resources


@pytest.fixture
def program():
    return MemoryProgram(Architecture(("turn",), "vector", "hybrid", "lightweight"),
                         resources=Resources(embedder=Embedder("hash"), use_encoder_cache=False))


def test_calling_the_module_does_not_warn_and_a_direct_forward_does(program, caplog):
    with caplog.at_level(logging.WARNING, logger="dspy.primitives.module"):
        program("where does Ana live?")
        assert not caplog.records
        program.forward("where does Ana live?")
        program.retriever.forward  # noqa: B018 (the lookup is what warns, as in dspy)
    warned = [r.getMessage() for r in caplog.records]
    assert any("on MemoryProgram directly" in m for m in warned)
    assert any("on HybridRetriever directly" in m for m in warned)


def test_attributes_read_as_before(program):
    for module in (program, program.retriever, program.manager, *program.encoders):
        assert module.resources is program.resources
        with pytest.raises(AttributeError):
            module.no_such_attribute  # noqa: B018
    assert [n for n, _ in program.named_predictors()] == [n for n, _ in program.named_predictors()]

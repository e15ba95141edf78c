"""The LM agents of the agent benchmarks: a dead endpoint fails the step (and so the trial) with
`LMUnavailableError`, as `call_typed` does — it is never turned into the LM-free agent's choice;
an answer outside the admissible actions still falls back (counted)."""
from __future__ import annotations

import pytest
from lm_helpers import dead_lm

from memarch.benchmarks.agents.dspy_agent import DSPyAgent
from memarch.benchmarks.agents.memory_guided import MemoryGuidedAgent
from memarch.benchmarks.agents.memory_skill import NoteSession
from memarch.benchmarks.agents.note_tools import NoteToolAgent
from memarch.lm import LMUnavailableError
from memarch.modules.stores.files import FilesStore

ADMISSIBLE = ["look around", "open fridge"]


def test_dspy_agent_raises_on_a_dead_endpoint_instead_of_falling_back():
    lm, server = dead_lm()
    agent = DSPyAgent(lm, fallback=MemoryGuidedAgent(seed=0))
    with pytest.raises(LMUnavailableError, match="unavailable"):
        agent.act("cook", "You are in the kitchen.", ADMISSIBLE, [], "", [])
    assert server.calls == 1 and agent.fallbacks == 0  # no corrective retry of a dead endpoint, no fallback


def test_note_tool_agent_raises_on_a_dead_endpoint_instead_of_falling_back(hash_resources, tmp_path):
    lm, server = dead_lm()
    session = NoteSession(FilesStore(hash_resources, root=str(tmp_path / "notes")), "ep",
                          {"upsert": 1, "search_before_write": 0, "kv_schema": 1})
    agent = NoteToolAgent(lm, session, fallback=MemoryGuidedAgent(seed=0))
    with pytest.raises(LMUnavailableError, match="unavailable"):
        agent.act("cook", "You are in the kitchen.", ADMISSIBLE, [], "", [])
    assert server.calls == 1 and agent.fallbacks == 0


def test_a_dead_endpoint_in_any_lm_path_fails_the_trial_as_lm_unavailable(hash_resources):
    """An LM encoder's own call (not one of the guarded paths) reaching a dead endpoint: the trial
    fails, named as the endpoint failure, with no score."""
    from memarch.benchmarks.evaluation.evaluate import evaluate
    from memarch.pipeline.architecture import Architecture
    from memarch.pipeline.resources import Resources

    lm, server = dead_lm()
    res = Resources(embedder=hash_resources.embedder, lm=lm, cache_dir=hash_resources.cache_dir,
                    use_encoder_cache=False)
    result = evaluate(Architecture(("fact",), "vector", "hybrid", "lightweight"), "generated", split="search",
                      resources=res, limit=3)
    assert result.failed and server.calls >= 1
    assert result.error.startswith("LMUnavailableError:") and "unavailable" in result.error, result.error

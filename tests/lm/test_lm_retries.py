"""Every corrective retry changes its input: with DSPy's response cache on, a retry of the identical
request would be answered from the cache with the same bad answer, never reaching the LM. One
recording scripted LM per retry loop, whose answers never parse."""
from __future__ import annotations

import json
import uuid

import dspy
import pytest

from lm_helpers import scripted_lm
from memarch.lm import configure_lm_cache


@pytest.fixture
def cached(tmp_path):
    """DSPy's response cache on (as in real runs), in a private directory."""
    configure_lm_cache(tmp_path / "lm")
    yield
    configure_lm_cache(tmp_path / "lm", enabled=False)


def _diagnoser(lm, resources, tag):
    from memarch.optimizers.samplers.guided.diagnoser import Diagnoser
    from memarch.benchmarks.evaluation.diagnosis import Diagnosis

    diagnosis = Diagnosis(f"turn|vector|hybrid|lightweight {tag}", 0.4, {"retrieve": 3}, 3, 0,
                          [{"query_id": "q1", "module": "retrieve"}])
    diagnoser = Diagnoser(lm)
    diagnoser(diagnosis, {"retrieve": "retrieve: hybrid -> mmr"})
    assert (diagnoser.lm_requests, diagnoser.fallbacks) == (1, 1)


def _agent(lm, resources, tag):
    from memarch.benchmarks.agents.memory_guided import MemoryGuidedAgent
    from memarch.benchmarks.agents.dspy_agent import DSPyAgent

    DSPyAgent(lm, fallback=MemoryGuidedAgent(seed=0)).act(f"cook {tag}", "obs", ["look", "open fridge"], [], "", [])


def _reader(lm, resources, tag):
    from memarch.benchmarks.evaluation.reader import MemoryReader

    assert MemoryReader(resources)(f"context {tag}", "Where?") is None


def _answer_judge(lm, resources, tag):
    from memarch.benchmarks.evaluation.reader import AnswerJudge

    assert AnswerJudge(resources)("Where?", "Boston", f"Paris {tag}") is None


def _retriever(lm, resources, tag):
    from memarch.modules.retrievers._lm import ask
    from memarch.modules.retrievers.hyde import check_passage
    from memarch.modules.signatures.retrievers import HypotheticalPassage

    assert ask(dspy.Predict(HypotheticalPassage), resources, check_passage, what="hyde", query=tag) is None


def _manager(lm, resources, tag):
    from memarch.modules.managers._judge import Judge
    from memarch.modules.signatures.managers import ResolveConflict

    assert Judge(dspy.Predict(ResolveConflict), resources, "manager:test")(existing_memory=tag, new_memory="x") is None


def _typed(lm, resources, tag):
    from memarch.lm import LMOutputError, call_typed
    from memarch.modules.signatures.retrievers import HypotheticalPassage

    with pytest.raises(LMOutputError):
        call_typed(dspy.Predict(HypotheticalPassage), lm, query=tag, feedback="")


def _conversation_encoder(lm, resources, tag):
    from memarch.modules.encoders.turn import TurnEncoder
    from memarch.pipeline.episodes import Episode, Turn

    episode = Episode(id=f"e/{tag}", namespace="e", turns=[Turn("D1:1", "Ann", f"My dog is Rex {tag}.")])
    encoder = TurnEncoder(resources)
    assert encoder.encode(episode) and encoder.fallbacks == 1


def _experience_encoder(lm, resources, tag):
    from memarch.modules.encoders.insight import InsightEncoder
    from memarch.pipeline.episodes import Episode, Step

    episode = Episode(id=f"x/{tag}", task=f"cook {tag}", outcome="failure",
                      steps=[Step("s1", "open oven", "The oven is locked.")])
    encoder = InsightEncoder(resources)
    encoder.encode(episode)
    assert encoder.fallbacks == 1


def _graph_store(lm, resources, tag):
    from memarch.modules.stores.llm_graph import LLMGraphStore

    store = LLMGraphStore(resources)
    assert store._predict(store.extractor, "extraction", text=f"Ann adopted Rex {tag}.", event_time="unknown") is None


SITES = {"diagnoser": _diagnoser, "agent": _agent, "reader": _reader, "answer_judge": _answer_judge,
         "retriever": _retriever, "manager": _manager, "call_typed": _typed,
         "conversation_encoder": _conversation_encoder, "experience_encoder": _experience_encoder,
         "llm_graph": _graph_store}


@pytest.mark.parametrize("site", sorted(SITES))
def test_a_retry_is_a_new_request_not_a_cache_replay(site, cached, hash_resources):
    lm, server = scripted_lm(["not json at all", "still not json"], cache=True)
    hash_resources.lm = lm
    SITES[site](lm, hash_resources, uuid.uuid4().hex[:8])
    # Two requests reached the LM: an identical retry would have been answered by DSPy's cache.
    assert len(server.bodies) == 2
    first, second = (json.dumps(b["messages"], sort_keys=True) for b in server.bodies)
    assert first != second

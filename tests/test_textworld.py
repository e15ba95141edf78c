"""TextWorldExpress: seeded fold-based splits, demonstrations, and the LM-free memory-guided agent."""
from __future__ import annotations

import shutil

import pytest

from memarch.pipeline.agents import MemoryGuidedAgent, guides_from, step_similarity
from memarch.pipeline.episodes import Query
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.retrieval import Retrieval, ScoredItem

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="TextWorldExpress needs Java (make install)")


def test_step_similarity_placeholders():
    assert step_similarity("take red apple", "take <OBJECT>") > step_similarity("open fridge", "take <OBJECT>")
    assert step_similarity("open fridge", "open fridge") == pytest.approx(1.0)
    assert step_similarity("move north", "move south") < 1.0


def test_agent_follows_retrieved_steps_and_explores_without_them():
    agent = MemoryGuidedAgent(seed=1)
    retrieval = Retrieval(Query("t"), [ScoredItem(MemoryItem("wf", "workflow", fields={"steps": [
        "open <CONTAINER>", "take <OBJECT>", "put <OBJECT> in <CONTAINER>"]}), 1.0)])
    guides = guides_from(retrieval)
    a, info = agent.act(["look around", "open fridge", "inventory"], [], guides)
    assert a == "open fridge" and "workflow" in info["why"]
    a, _ = agent.act(["open fridge", "take egg", "close fridge"], ["open fridge"], guides)
    assert a == "take egg"
    # without guidance it does not repeat an action it already took
    a, _ = agent.act(["look around", "move north"], ["look around"], [])
    assert a == "move north"


@pytest.fixture(scope="module")
def bench():
    from memarch.benchmarks.textworld import TextWorldBenchmark

    return TextWorldBenchmark(games=("twc", "coin"), tasks_per_game=2, step_limit=25, seed=0)


def test_splits_use_disjoint_game_folds(bench):
    search, test = bench.split("search"), bench.split("test")
    assert {t.metadata["fold"] for t in search.tasks} == {"train"}
    assert {t.metadata["fold"] for t in test.tasks} == {"test"}
    assert not {t.id for t in search.tasks} & {t.id for t in test.tasks}
    assert [t.id for t in bench.split("search").tasks] == [t.id for t in search.tasks]  # seeded


def test_demonstration_then_guided_replay_succeeds(bench):
    view = bench.split("search")
    collect, deploy = view.phases()
    assert collect and deploy and all(t.metadata["phase"] == "collect" for t in collect)
    demo = view.attempt(collect[0], None)
    assert demo.outcome == "success" and demo.metadata["demonstration"]
    assert all(s.action and s.id for s in demo.steps)
    # Deploy the same instance with its own trajectory as memory: the agent follows it step by step.
    task = {**collect[0].__dict__}
    replay_task = type(collect[0])(id=task["id"] + "-replay", text=task["text"], namespace=task["namespace"],
                                   metadata={k: v for k, v in task["metadata"].items() if k != "phase"})
    memory = Retrieval(Query(replay_task.text), [ScoredItem(MemoryItem(
        "t", "trajectory", fields={"steps": [s.action for s in demo.steps]}), 1.0)])
    replay = view.attempt(replay_task, "context", retrieval=memory)
    assert replay.outcome == "success"
    assert [s.action for s in replay.steps] == [s.action for s in demo.steps]


def test_lm_free_agent_plays_without_memory(bench):
    view = bench.split("validation")
    _, deploy = view.phases()
    ep = view.attempt(deploy[0], None)
    assert ep.outcome in ("success", "failure") and 1 <= len(ep.steps) <= 25
    assert 0.0 <= view.score(deploy[0], ep) <= 1.0


def test_dspy_agent_picks_an_admissible_action_or_falls_back():
    import dspy
    from dspy.utils import DummyLM

    from memarch.pipeline.agents import DSPyAgent

    lm = DummyLM([{"reasoning": "the fridge holds food", "action": "open fridge"}], adapter=dspy.JSONAdapter())
    agent = DSPyAgent(lm)
    action, info = agent.act("cook", "You are in the kitchen.", ["look around", "open fridge"], [], "", [])
    assert action == "open fridge" and info["lm"] is True
    bad = DummyLM([{"reasoning": "x", "action": "fly to the moon"}] * 2, adapter=dspy.JSONAdapter())
    agent = DSPyAgent(bad, fallback=MemoryGuidedAgent(seed=0))
    action, info = agent.act("cook", "obs", ["look around", "open fridge"], ["look around"], "", [])
    assert action == "open fridge" and info["lm"] is False and agent.fallbacks == 1

"""LM fallbacks are never silent: an unusable reader answer is a failed query (not an abstention),
and every module's fallbacks reach `TrialResult`, the study's history, `memarch evaluate` and MLflow."""
from __future__ import annotations

import dspy
import pytest
from dspy.utils import DummyLM

from memarch.benchmarks.base import Benchmark, Dialogue, Question
from memarch.benchmarks.evaluation.reader import MemoryReader
from memarch.cli.evaluate import _print
from memarch.optimizers.search.history import compact, expand
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.episodes import Episode, Turn
from memarch.benchmarks.evaluation.evaluate import evaluate
from memarch.pipeline.trial import TrialResult

TURNS = Architecture(("turn",), "vector", "hybrid", "lightweight")


class Chat(Benchmark):
    name = "chat"


def chat() -> Chat:
    session = Episode(id="c/s1", namespace="c", turns=[Turn("D1:1", "Ann", "My dog is called Rex.", date="2023-05-08"),
                                                       Turn("D1:2", "Bo", "Nice, I have a cat.", date="2023-05-08")])
    questions = [Question("c/boat", "What is the boat called?", None, [], "adversarial")]
    return Chat([Dialogue("c", [session], questions)])


def garbage_lm() -> DummyLM:
    """Every answer is unparsable (no scripted answer matches any prompt)."""
    return DummyLM({}, adapter=dspy.JSONAdapter())


def test_unparsable_reader_answer_fails_the_adversarial_question(hash_resources):
    hash_resources.lm = garbage_lm()
    result = evaluate(TURNS, chat(), split="all", resources=hash_resources, reader=MemoryReader(hash_resources),
                      metric="qa_f1")
    (outcome,) = result.outcomes
    # Before: the reader abstained ("No information available."), a perfect score on this question.
    assert outcome.score == 0.0 and outcome.success is False
    assert outcome.evidence["reader_failed"] is True and outcome.evidence["prediction"] is None
    assert result.score == 0.0 and result.fallbacks["reader"] == 1 and result.lm_requests["reader"] == 1


def test_fallbacks_per_module_reach_the_trial_and_the_printout(hash_resources, capsys):
    hash_resources.lm = garbage_lm()
    result = evaluate(TURNS, chat(), split="all", resources=hash_resources, reader=MemoryReader(hash_resources),
                      metric="qa_f1")
    assert result.lm_requests == {"encoder:turn": 1, "reader": 1}
    assert result.fallbacks == {"encoder:turn": 1, "reader": 1}
    _print(result)
    out = capsys.readouterr().out
    assert "LM fallbacks: encoder:turn 1 of 1, reader 1 of 1" in out
    assert "WARNING: every LM answer (2) fell back" in out


def test_a_partly_working_lm_is_reported_without_the_warning(hash_resources, capsys):
    # Only the reader's prompt (which holds the question) gets a usable answer.
    hash_resources.lm = DummyLM({"boat called": {"answer": "No information available."}}, adapter=dspy.JSONAdapter())
    result = evaluate(TURNS, chat(), split="all", resources=hash_resources, reader=MemoryReader(hash_resources),
                      metric="qa_f1")
    assert result.fallbacks == {"encoder:turn": 1, "reader": 0} and result.score == 1.0
    _print(result)
    out = capsys.readouterr().out
    assert "LM fallbacks: encoder:turn 1 of 1, reader 0 of 1" in out and "WARNING" not in out


def test_counts_are_per_trial_for_a_program_passed_in(hash_resources):
    from memarch.pipeline.program import MemoryProgram

    hash_resources.lm = garbage_lm()
    hash_resources.use_encoder_cache = False
    program = MemoryProgram(TURNS, resources=hash_resources)
    first = evaluate(program, chat(), split="all", resources=hash_resources)
    second = evaluate(program, chat(), split="all", resources=hash_resources)
    assert first.fallbacks == second.fallbacks == {"encoder:turn": 1}  # a delta, not the running total


def test_lm_free_trial_has_no_fallbacks(hash_resources, capsys):
    result = evaluate(TURNS, chat(), split="all", resources=hash_resources)
    assert result.fallbacks == {} and result.lm_requests == {}
    _print(result)
    assert "LM fallbacks" not in capsys.readouterr().out


def test_fallbacks_survive_the_study_history_and_reach_mlflow(tmp_path):
    from memarch.optimizers.tracking.tracker import Tracker

    result = TrialResult(TURNS, "chat", "search", 0.5, fallbacks={"encoder:turn": 3, "reader": 0},
                         lm_requests={"encoder:turn": 4, "reader": 10}, metadata={"metric": "qa_f1"})
    again = expand(TURNS, compact(result))
    assert again.fallbacks == result.fallbacks and again.lm_requests == result.lm_requests
    assert again.metadata["metric"] == "qa_f1"
    assert expand(TURNS, {"objective": 0.1}).fallbacks == {}  # attrs stored before the field existed
    tracker = Tracker(f"file://{tmp_path}/mlruns", artifact_root=tmp_path / "artifacts")  # no DB to create
    run_id = tracker.log_trial(0, TURNS, result, {})
    metrics = tracker.client.get_run(run_id).data.metrics
    assert metrics["fallbacks_encoder_turn"] == 3 and metrics["fallbacks_reader"] == 0
    assert metrics["fallbacks_total"] == 3 and metrics["lm_requests_total"] == 14


def test_task_benchmark_agent_fallbacks_come_back_through_the_episodes(hash_resources):
    from memarch.benchmarks.base import AgentTask, TaskBenchmark

    class Game(TaskBenchmark):
        name = "game"

        def attempt(self, task, context, retrieval=None):
            return Episode(id=task.id, task=task.text, outcome="failure", namespace=task.namespace,
                           metadata={"agent_lm_requests": 5, "agent_fallbacks": 2})

    bench = Game([AgentTask(f"t{i}", "cook", namespace="g") for i in range(4)])
    result = evaluate(None, bench, split="all", resources=hash_resources)
    assert len(bench.phases()[1]) == 2  # two deployed, two collected: the agent played all four
    assert result.lm_requests == {"agent": 5 * 4} and result.fallbacks == {"agent": 2 * 4}


@pytest.mark.parametrize("module", ["reader", "judge"])
def test_reader_and_judge_count_requests(hash_resources, module):
    from memarch.benchmarks.evaluation.reader import AnswerJudge

    hash_resources.lm = garbage_lm()
    if module == "reader":
        reader = MemoryReader(hash_resources)
        assert reader("ctx", "q?") is None
        counted = reader
    else:
        judge = AnswerJudge(hash_resources)
        assert judge("Where?", "Boston", "Paris") is None
        counted = judge
    assert (counted.lm_requests, counted.fallbacks) == (1, 1)

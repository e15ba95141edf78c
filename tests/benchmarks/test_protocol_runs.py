"""One run per evaluation protocol, chosen by what the benchmark declares (`Benchmark.protocol`), and
``on_instance`` only where a benchmark declares that it scores instance by instance."""
from __future__ import annotations

import pytest

from memarch.benchmarks import get_benchmark
from memarch.benchmarks.base import AgentTask, TaskBenchmark
from memarch.benchmarks.evaluation.evaluate import evaluate
from memarch.benchmarks.evaluation.runs import CollectDeployProtocol, StreamProtocol, protocol_of
from memarch.benchmarks.evaluation.settings import EvaluationSettings
from memarch.errors import MemarchError
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.episodes import Episode, Step
from memarch.pipeline.program import MemoryProgram

SETTINGS = EvaluationSettings(top_k=8)


class Doors(TaskBenchmark):
    """A task succeeds when the memory context names its door."""

    name = "doors"

    def attempt(self, task, context, retrieval=None):
        ok = context is not None and task.metadata["door"] in context
        return Episode(id=task.id, task=task.text, outcome="success" if ok else "failure", namespace=task.namespace,
                       steps=[Step(id="s1", action="open", observation=f"the door is {task.metadata['door']}")])


def doors() -> Doors:
    return Doors([AgentTask(f"t{i}", "open the door", metadata={"door": "red"}) for i in range(4)])


def test_the_stream_protocol_runs_a_conversation_benchmark(hash_resources):
    view = get_benchmark("generated", conversations=2, sessions=3).split("all").limit(6)
    protocol = protocol_of(view)
    assert isinstance(protocol, StreamProtocol)
    arch = Architecture(("turn",), "vector", "hybrid", "lightweight")
    program = MemoryProgram(arch, resources=hash_resources, top_k=8)
    result = protocol.run(program, view, SETTINGS)
    assert result.metadata["protocol"] == "stream" and result.metadata["metric"] == "answer_span"
    assert len(result.outcomes) == 6 and result.metadata["instances"] == {"done": 1, "total": 1}
    baseline = protocol.run(None, view, SETTINGS)
    assert baseline.score == 0.0 and len(baseline.outcomes) == 6


def test_the_collect_deploy_protocol_runs_agent_tasks():
    bench = doors()
    protocol = protocol_of(bench)
    assert isinstance(protocol, CollectDeployProtocol)
    result = protocol.run(None, bench, SETTINGS)
    assert result.metadata["protocol"] == "collect_deploy:static" and result.metadata["metric"] == "task_score"
    assert [o.query_id for o in result.outcomes] == ["t2", "t3"] and result.score == 0.0


def test_on_instance_is_refused_by_a_benchmark_that_does_not_score_per_instance(hash_resources):
    """It was silently ignored for agent tasks: a pruner that is never asked, without a word."""
    asked = []
    with pytest.raises(MemarchError, match="doors does not score instance by instance"):
        evaluate(None, doors(), split="all", resources=hash_resources, on_instance=lambda *a: asked.append(a))
    with pytest.raises(MemarchError, match="does not score instance by instance"):
        CollectDeployProtocol().run(None, doors(), SETTINGS, on_instance=lambda *a: False)
    assert not asked
    stream = get_benchmark("generated", conversations=2, sessions=3)
    evaluate(None, stream, split="all", resources=hash_resources, on_instance=lambda *a: asked.append(a))
    assert [a[:2] for a in asked] == [(1, 2), (2, 2)]  # dialogue by dialogue


def test_the_evaluator_reads_the_declarations(hash_resources):
    from memarch.optimizers.evaluators import BenchmarkEvaluator

    tasks = BenchmarkEvaluator(doors(), resources=hash_resources)
    assert not tasks.supports_instances() and tasks.metric == "task_score" and tasks.family == "experience"
    stream = BenchmarkEvaluator("generated", resources=hash_resources, knobs={"conversations": 2})
    assert stream.supports_instances() and stream.metric == "answer_span" and stream.family == "conversation"
    record = stream.evaluation_record({}, stream.metric)
    assert record.data is None and record.knobs["conversations"] == 2
    assert record.split == {"seed": 0, "split_by": "question", "fractions": stream.benchmark.fractions}

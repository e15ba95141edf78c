"""Every benchmark declares what callers read of it (`Benchmark`'s declared members), checked when
its class is defined: each class of the catalog passes, a new one without its declarations fails."""
from __future__ import annotations

import pytest

from memarch.benchmarks import available, benchmark_class, get_benchmark
from memarch.benchmarks.base import COLLECT_DEPLOY, DECLARED, STREAM, Benchmark, TaskBenchmark, check_declarations
from memarch.benchmarks.evaluation.runs import EVALUATION_PROTOCOLS, EvaluationProtocol
from memarch.errors import MemarchError
from memarch.pipeline.registry import FAMILIES

FLAGS = ("scores_per_instance", "uses_note_store", "uses_agent_lm", "opt_in_modules")


@pytest.mark.parametrize("name", available())
def test_every_catalog_benchmark_declares_its_members(name):
    cls = benchmark_class(name)
    check_declarations(cls)  # what the class statement already ran: nothing to refuse
    assert cls.name == name and "name" in vars(cls)
    assert all(hasattr(cls, member) for member in DECLARED)
    assert cls.family in FAMILIES and all(isinstance(getattr(cls, f), bool) for f in FLAGS)
    assert isinstance(EVALUATION_PROTOCOLS[cls.protocol], EvaluationProtocol)  # a run for its protocol
    # the protocol decides the rest: one run and one metric for agent tasks, per-instance scoring for streams
    if cls.protocol == COLLECT_DEPLOY:
        assert issubclass(cls, TaskBenchmark) and cls.metric == "task_score" and not cls.scores_per_instance
    else:
        assert cls.protocol == STREAM and cls.metric is None and cls.scores_per_instance


def test_the_agent_that_keeps_notes_and_plays_with_an_lm_says_so():
    tw = benchmark_class("textworld")
    assert tw.uses_note_store and tw.uses_agent_lm and tw.opt_in_modules and tw.family == "experience"
    assert not any(benchmark_class(n).uses_note_store or benchmark_class(n).uses_agent_lm
                   for n in available() if n != "textworld")
    with pytest.raises(MemarchError, match="keeps no notes"):
        get_benchmark("generated", conversations=1).use_note_store(None)


def test_a_built_benchmark_declares_its_data_and_knobs(data_dir):
    generated = get_benchmark("generated", conversations=2, sessions=3)
    assert generated.path is None and generated.knobs["conversations"] == 2 and generated.split_unit == "question"
    babi = get_benchmark("babi", data_dir / "babi", tasks=[1], stories=2)
    assert babi.path is not None and dict(babi.knobs) == {} and babi.categories


def test_a_benchmark_without_its_own_name_fails_when_defined():
    with pytest.raises(TypeError, match="declares no name of its own"):
        class Nameless(Benchmark):
            pass
    with pytest.raises(TypeError, match="declares no name of its own"):
        class Inherits(TaskBenchmark):  # "tasks" is TaskBenchmark's, not this class's
            def attempt(self, task, context, retrieval=None):
                raise NotImplementedError


@pytest.mark.parametrize("body, needle", [
    ({"family": "chat"}, "family 'chat' is not one of"),
    ({"protocol": "replay"}, "protocol 'replay' is not one of"),
    ({"uses_agent_lm": "yes"}, "uses_agent_lm is not a bool"),
    ({"categories": ["a", "b"]}, "categories is not a tuple"),
    ({"uses_note_store": True}, "declares uses_note_store but has no use_note_store"),
    ({"protocol": COLLECT_DEPLOY}, "only the stream protocol scores instance by instance"),
    ({"lm_free_metric": 3}, "lm_free_metric 3 is neither a name nor None"),
    ({"official_report": ["longmemeval"]}, "official_report \\['longmemeval'\\] is neither a name nor None"),
])
def test_a_wrong_declaration_fails_when_defined(body, needle):
    with pytest.raises(TypeError, match=needle):
        type("Wrong", (Benchmark,), {"name": "wrong", **body})


def test_the_split_rule_round_trips():
    bench = get_benchmark("generated", conversations=6, sessions=2)
    rule = bench.split_rule()
    assert rule == {"seed": 0, "split_by": "dialogue", "fractions": bench.fractions}
    other = get_benchmark("generated", conversations=6, sessions=2, split_seed=5)
    test_ids = [q.id for q in bench.split("test").questions()]
    assert [q.id for q in other.split("test").questions()] != test_ids
    other.use_split_rule(rule)  # a recorded rule: its seed decides the dialogues' splits too
    assert other.split_rule() == rule and [q.id for q in other.split("test").questions()] == test_ids


@pytest.mark.parametrize("name", available())
def test_declared_metric_and_report_names_are_registered(name):
    from memarch.benchmarks.metrics.registry import LM_METRICS, METRICS, OFFICIAL_REPORTS

    cls = benchmark_class(name)
    assert cls.lm_free_metric is None or (cls.lm_free_metric in METRICS and cls.lm_free_metric not in LM_METRICS)
    assert cls.official_report is None or OFFICIAL_REPORTS[cls.official_report].name == cls.official_report

"""The ``--metric`` option that `evaluate`, `compile` and `compare` share (the quality metric;
``--objectives`` names a study's objectives: the metric's score plus costs): the option, the check
of a name against the benchmark and the LMs given (one line, exit 2), and its printed name."""
from __future__ import annotations

from typing import Any

from memarch.errors import MemarchError
from memarch.benchmarks.metrics.registry import LM_METRICS as WITH_LM
from memarch.benchmarks.metrics.registry import METRICS, default_metric, describe_metric

LM_FREE = tuple(o for o in METRICS if o not in WITH_LM)


def add_metric_argument(p) -> None:
    p.add_argument("--metric", default=None, metavar="NAME",
                   help=f"conversation benchmarks: {'|'.join(LM_FREE)} (default answer_span), or with an LM "
                        f"{'|'.join(WITH_LM)} (default qa_f1); agent benchmarks always use their task score")


def check_metric(metric: str | None, benchmark: Any, *, lm: bool, judge: bool = True) -> str | None:
    """``metric`` if it suits the benchmark and the LMs given (None stays None: the default),
    else MemarchError naming what would do.

    Args:
        lm: a task LM (hence a reader) is configured.
        judge: an answer judge can be built (``--judge`` / ``--judge-lm``, or any LM for compile).
    """
    if metric is None:
        return None
    from memarch.benchmarks.base import TaskBenchmark

    if metric not in METRICS:
        raise MemarchError(f"--metric {metric!r}: expected one of {', '.join(METRICS)}")
    if isinstance(benchmark, TaskBenchmark):
        raise MemarchError(f"--metric {metric}: {benchmark.name} is an agent benchmark, scored by its "
                           "task score (drop --metric)")
    if metric in WITH_LM and not lm:
        raise MemarchError(f"--metric {metric} needs an LM reader (--lm); without an LM use one of "
                           f"{', '.join(LM_FREE)}")
    if metric == "judge" and not judge:
        raise MemarchError("--metric judge needs an answer judge (memarch evaluate: add --judge)")
    return metric


def objective_of(metric: Any) -> str:
    """The name of the objective a `BenchmarkMetric` (or a `CachedMetric` around one) scores."""
    from memarch.benchmarks.base import TaskBenchmark

    inner = getattr(metric, "metric", metric)
    kwargs = getattr(inner, "kwargs", {})
    if isinstance(getattr(inner, "benchmark", None), TaskBenchmark):
        return "task_score"
    return kwargs.get("objective") or default_metric(kwargs.get("reader"))


def objective_line(metric: Any) -> str:
    """"objective: answer_span (LM-free: gold answer contiguous in the context cut at 200 words)"."""
    inner = getattr(metric, "metric", metric)
    budget = getattr(inner, "kwargs", {}).get("budget_tokens", 200)
    return f"objective: {describe_metric(objective_of(metric), budget)}"

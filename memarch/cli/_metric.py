"""The ``--metric`` option that `evaluate`, `compile` and `compare` share (the quality metric;
``--objectives`` names a study's objectives: the metric's score plus costs): the option, the check
of a name against the benchmark and the LMs given (one line, exit 2), and its printed name."""
from __future__ import annotations

from typing import Any

from memarch.errors import MemarchError
from memarch.benchmarks.metrics.registry import LM_METRICS as WITH_LM
from memarch.benchmarks.metrics.registry import METRICS, describe_metric
from memarch.pipeline.retrieval import DEFAULT_CONTEXT_BUDGET

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
    if metric not in METRICS:
        raise MemarchError(f"--metric {metric!r}: expected one of {', '.join(METRICS)}")
    if benchmark.metric is not None:  # its score is always its own metric (agent tasks: the task score)
        raise MemarchError(f"--metric {metric}: {benchmark.name} is an agent benchmark, scored by its "
                           f"{benchmark.metric.replace('_', ' ')} (drop --metric)")
    if metric in WITH_LM and not lm:
        raise MemarchError(f"--metric {metric} needs an LM reader (--lm); without an LM use one of "
                           f"{', '.join(LM_FREE)}")
    if metric == "judge" and not judge:
        raise MemarchError("--metric judge needs an answer judge (memarch evaluate: add --judge)")
    return metric


def metric_line(evaluator: Any) -> str:
    """"metric: answer_span (LM-free: gold answer contiguous in the context cut at 200 words)"."""
    settings = evaluator.settings
    budget = settings.context_budget if settings is not None else DEFAULT_CONTEXT_BUDGET
    return f"metric: {describe_metric(evaluator.metric, budget)}"

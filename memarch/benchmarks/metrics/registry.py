"""The metric registry: the quality metrics a conversation trial is scored by, which one is the
default, how each is named in printed output (agent benchmarks always use their task score), and
the benchmarks' official reports by name (`OFFICIAL_REPORTS`).
A *metric* measures one evaluation; a study's *objectives* (`memarch.optimizers.search.objectives`)
are the metric and the costs it optimises."""
from __future__ import annotations

from typing import Any, Callable, Sequence

from memarch.benchmarks.base import Question
from memarch.benchmarks.metrics.longmemeval_official import LongMemEvalReport
from memarch.benchmarks.metrics.official_report import OfficialReport
from memarch.benchmarks.metrics.retrieval import RANKING_METRICS, RETRIEVAL_METRICS, SESSION_PREFIX
from memarch.benchmarks.metrics.scores import answer_recall, answer_span, evidence_recall
from memarch.benchmarks.metrics.span_or_evidence import span_or_evidence
from memarch.pipeline.retrieval import DEFAULT_CONTEXT_BUDGET

ContextMetric = Callable[[Question, str, Sequence[str], "int | None"], "float | None"]
# The LM-free metrics of a read, in scoring order: name -> score(question, context, the retrieved
# items' source ids, context budget in words), for answerable questions.
CONTEXT_METRICS: dict[str, ContextMetric] = {
    "answer_span": lambda q, context, sources, budget: answer_span(q.answer, context, budget),
    "answer_recall": lambda q, context, sources, budget: answer_recall(q.answer, context, budget),
    "evidence_recall": lambda q, context, sources, budget: evidence_recall(q.evidence, sources),
    "span_or_evidence": span_or_evidence,
}
# The official reports a benchmark may name (``Benchmark.official_report``).
OFFICIAL_REPORTS: dict[str, OfficialReport] = {r.name: r for r in (LongMemEvalReport(),)}
METRICS = (*CONTEXT_METRICS, *RANKING_METRICS, "qa_f1", "judge")
LM_METRICS = ("qa_f1", "judge")  # need a reader (and, for judge, a judge)


def default_metric(reader: Any = None, lm_free: str | None = None) -> str:
    """The metric of a conversation benchmark when none is named: QA F1 with an LM reader,
    else the benchmark's LM-free metric (``lm_free``: its ``Benchmark.lm_free_metric``), else the
    strict LM-free `answer_span`."""
    return "qa_f1" if reader is not None else lm_free or "answer_span"


def check_metric(metric: str | None, reader: Any = None, judge: Any = None, lm_free: str | None = None) -> str:
    """The metric to use (the default for None, `default_metric`); ValueError for an unknown name
    or an LM metric without its reader or judge."""
    metric = metric or default_metric(reader, lm_free)
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}, not {metric!r}")
    if metric in LM_METRICS and reader is None:
        raise ValueError(f"metric {metric} needs an LM reader (without one: answer_span, answer_recall "
                         "or evidence_recall)")
    if metric == "judge" and judge is None:
        raise ValueError("metric judge needs an answer judge")
    return metric


def explain_metric(metric: str, context_budget: int | None = DEFAULT_CONTEXT_BUDGET) -> str:
    """What a metric measures, in a few words ("" for an unknown name)."""
    cut = f"the context cut at {context_budget} words" if context_budget else "the whole context"
    if metric in RANKING_METRICS:
        unit = "session" if metric.startswith(SESSION_PREFIX) else "turn"
        name, _, k = metric.removeprefix(SESSION_PREFIX).partition("@")
        what = {"hit": f"1 iff a gold evidence {unit} is among the first {k} covered {unit}s",
                "recall": f"share of gold evidence {unit}s among the first {k} covered {unit}s",
                "ndcg": f"NDCG of the first {k} covered {unit}s against the gold evidence",
                "mrr": f"1 / rank of the first covered gold evidence {unit}"}[name]
        ranked = " (a session ranked by its best item)" if unit == "session" else ""
        return f"LM-free, {unit} level (trec_eval): {what}{ranked}"
    return {"answer_span": f"LM-free: gold answer contiguous in {cut}",
            "answer_recall": f"LM-free: share of gold answer words anywhere in {cut}",
            "evidence_recall": "LM-free: share of gold evidence turns among the retrieved items' sources",
            "span_or_evidence": f"LM-free, by the question's rule: gold answer contiguous in {cut} where it is a "
                                "short span stated in the history, else share of its evidence turns in the context",
            "qa_f1": "LM reader's answer, LoCoMo word F1", "judge": "LM judge's verdict on the reader's answer",
            "task_score": "the agent benchmark's task score"}.get(metric, "")


def describe_metric(metric: str, context_budget: int | None = DEFAULT_CONTEXT_BUDGET) -> str:
    """A metric named for printed output: "answer_span (LM-free: gold answer contiguous in the
    context cut at 200 words)"."""
    what = explain_metric(metric, context_budget)
    return f"{metric} ({what})" if what else metric

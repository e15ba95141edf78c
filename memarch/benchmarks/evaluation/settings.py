"""`EvaluationSettings`: how an evaluation reads the memory and scores it — the context budget, items
per read, the metric, the reader and judge, the success threshold and the program's config —
in one object that `evaluate`, the evaluators and the CLI pass along instead of a dozen keywords."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from memarch.pipeline.retrieval import DEFAULT_CONTEXT_BUDGET, DEFAULT_TOP_K
from memarch.pipeline.settings import Settings


def default_top_k(context_budget: int | None) -> int:
    """Items per read when none is given: enough to fill the budget (B / 10, at least `DEFAULT_TOP_K`)."""
    return max(DEFAULT_TOP_K, (context_budget or DEFAULT_CONTEXT_BUDGET) // 10)


@dataclass(frozen=True)
class EvaluationSettings(Settings):
    """How one evaluation reads and scores.

    Example::

        settings = EvaluationSettings(context_budget=200, metric="evidence_recall")
        evaluate(arch, bench, split="validation", settings=settings)
        settings.replace(top_k=8).read_top_k   # 8

    Args:
        context_budget: words of retrieved context the reader gets (None: unlimited).
        top_k: items per read; None = enough to fill the budget (`default_top_k`). An
            architecture that sets the ``retrieve.top_k`` knob reads with that instead.
        metric: the metric a conversation evaluation's score is (one of
            `memarch.benchmarks.metrics.registry.METRICS`; None: ``qa_f1`` with a reader, else the
            benchmark's ``lm_free_metric``, else ``answer_span``); agent benchmarks always score
            their task score.
        reader: a callable ``(context, question) -> answer`` (e.g. `MemoryReader`): adds
            ``qa_f1`` and scores unanswerable questions.
        judge: a callable ``(question, gold, answer) -> bool | None`` (e.g. `AnswerJudge`).
        success_threshold: a question whose score is below it is a failure (attributed).
        config: the program's config (e.g. a memory budget), for programs built from an
            architecture.
    """

    context_budget: int | None = DEFAULT_CONTEXT_BUDGET
    top_k: int | None = None
    metric: str | None = None
    reader: Any = None
    judge: Any = None
    success_threshold: float = 0.5
    config: dict | None = None

    what: ClassVar[str] = "evaluation setting"

    @property
    def read_top_k(self) -> int:
        """Items per read: ``top_k``, or enough to fill the context budget."""
        return self.top_k if self.top_k is not None else default_top_k(self.context_budget)

    def metric_name(self, benchmark: Any = None) -> str:
        """The metric a conversation evaluation scores: ``metric``, else the default for the reader
        (without one: ``benchmark``'s declared ``lm_free_metric`` when it has one)."""
        from memarch.benchmarks.metrics.registry import default_metric

        return self.metric or default_metric(self.reader, None if benchmark is None else benchmark.lm_free_metric)

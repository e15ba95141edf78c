"""`OfficialReport`: a benchmark's own scoring, computed beside memarch's — its official retrieval
metrics over the run a read gives, their averages as its scripts take them, and its per-category
bookkeeping. A benchmark names its report (``Benchmark.official_report``); the registry
(`memarch.benchmarks.metrics.registry.OFFICIAL_REPORTS`) finds it; the stream protocol asks it
once per dialogue (`corpus`), once per question (`question_scores`) and once per result."""
from __future__ import annotations

import abc
from typing import Any, ClassVar, Sequence

from memarch.benchmarks.base import Dialogue, Question


class OfficialReport(abc.ABC):
    """One benchmark's official report.

    Example::

        report = OFFICIAL_REPORTS["longmemeval"]
        corpus = report.corpus(dialogue)
        rows = [(q, report.question_scores(q, corpus, ranked_turns)) for q in dialogue.questions]
        report.summary(rows)["strict"]["n"]
    """

    name: ClassVar[str]

    @abc.abstractmethod
    def corpus(self, dialogue: Dialogue) -> Any:
        """What the official metrics rank over in ``dialogue`` (worked out once per dialogue)."""

    @abc.abstractmethod
    def question_scores(self, question: Question, corpus: Any, ranked_turns: Sequence[str]) -> dict[str, float]:
        """The official metrics of one question, by name, for the turn ids a read covers in rank
        order (`memarch.benchmarks.metrics.retrieval.ranked_turns`)."""

    @abc.abstractmethod
    def summary(self, rows: list[tuple[Question, dict[str, float]]]) -> dict[str, Any]:
        """The averages the official scripts report, over ``(question, question_scores)`` rows
        (every question read, abstention included), each with the number of questions it averages."""

    @abc.abstractmethod
    def category_report(self, scored: list[tuple[str, float, bool]], skipped: int) -> dict[str, Any]:
        """The per-category table as the official scripts print it, from ``(category, score,
        is_abstention)`` per scored question and the number of questions left unscored (no LM)."""

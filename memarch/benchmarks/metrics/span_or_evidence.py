"""`span_or_evidence`: an LM-free score that checks each question by what an LM-free check can
see — the gold answer as a span where the answer is a short span copied from the history, else the
share of the question's evidence turns in the context. A benchmark's loader rules per question
(`lm_free_rule`, kept in ``Question.metadata``); a question without a rule has no value (the
metric's fallback, `answer_span`, stands in and is counted, as for any question without a value).

LongMemEval's types, by what their gold answers are (measured on the 468 non-abstention _S
questions; docs/benchmarks.md, "LongMemEval"):
- single-session-user, single-session-assistant, knowledge-update: a fact the user (or the
  assistant) said, usually a short span ("Luna", "Denver", "under my bed"): `answer_span` when the
  answer is a short span (`is_short_span`), else evidence.
- temporal-reasoning, multi-session: derived answers (durations between dates, counts and sums
  across sessions: "7 days. 8 days (including the last day) is also acceptable.", "$5,850", 3) that
  the history never states: evidence only (a span test would score the format, not the memory).
- single-session-preference: the answer is a rubric ("The user would prefer suggestions of ..."):
  evidence only.
- abstention (``_abs``): no gold answer; left out of every LM-free score and counted as skipped.

Example::

    lm_free_rule("single-session-user", "Luna")                    # "answer_span"
    lm_free_rule("knowledge-update", "25")                         # "evidence" (a bare number)
    lm_free_rule("multi-session", "3 days")                        # "evidence" (derived)
"""
from __future__ import annotations

from typing import Any, Sequence

from memarch.benchmarks.base import Question
from memarch.benchmarks.metrics.answer_span import answer_span
from memarch.benchmarks.metrics.scores import evidence_recall

SPAN = "answer_span"
EVIDENCE = "evidence"
# The question types whose answers are stated in the history (the others derive or judge them).
SPAN_TYPES = ("single-session-user", "single-session-assistant", "knowledge-update")
MAX_SPAN_WORDS = 5


def is_short_span(answer: Any) -> bool:
    """A gold answer a reader would copy: a string of at most `MAX_SPAN_WORDS` words with a letter
    in it (a bare number or amount — "25", "$12", "20%" — matches digits anywhere in a context,
    and a JSON number in the file is a count)."""
    return isinstance(answer, str) and 0 < len(answer.split()) <= MAX_SPAN_WORDS and any(c.isalpha() for c in answer)


def lm_free_rule(question_type: str, answer: Any) -> str:
    """``"answer_span"`` for a short span of a type whose answers are stated, else ``"evidence"``
    (``answer``: the gold answer as the file has it, a JSON number kept a number)."""
    return SPAN if question_type in SPAN_TYPES and is_short_span(answer) else EVIDENCE


def span_or_evidence(question: Question, context: str, sources: Sequence[str],
                     context_budget: int | None) -> float | None:
    """The question's score by its rule (``metadata["lm_free_rule"]``): `answer_span` in the
    context cut at the budget, or the share of its evidence turns (``metadata["lm_free_evidence"]``)
    among the sources of the items in the context (an item the budget cut short still counts, as
    in `evidence_recall`); None for a question without a rule or without evidence (callers count it)."""
    rule = question.metadata.get("lm_free_rule")
    if rule == SPAN:
        return answer_span(question.answer, context, context_budget)
    if rule == EVIDENCE:
        return evidence_recall(question.metadata.get("lm_free_evidence", ()), sources)
    return None

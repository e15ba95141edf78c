"""The benchmark's metric in DSPy's shape, ``metric(example, pred, trace)``, for prompt
optimisation; with ``feedback=True`` (GEPA) a ``dspy.Prediction(score, feedback)`` whose text is the
failure attribution — which module lost the answer — and the gold evidence that was missed."""
from __future__ import annotations

from typing import Any

import dspy

from memarch.optimizers.prompts.student import prompt_name

# What a loss at each stage means, for the reflection LM (see memarch/benchmarks/evaluation/attribution.py).
STAGES = {
    "encode": ("encoder", "no memory item was written from the gold evidence: the encoder left it out"),
    "manage": ("manager", "the manager dropped, superseded or deleted the items that held the gold evidence"),
    "store": ("store", "the items holding the gold evidence were kept but are not active in the store"),
    "retrieve": ("retriever", "the gold evidence was in memory but not retrieved within the top k and "
                              "the context budget"),
}
MISSED_SHOWN = 3  # gold turns quoted per feedback
QUOTE_CHARS = 240


class PromptMetric:
    """``metric(example, pred, trace=None, pred_name=None, pred_trace=None)``: the question's
    benchmark score as `PromptStudent` computed it (``pred.score``: the metric of
    `memarch.benchmarks.evaluation.question_scoring.ask`, e.g. QA F1 of the reader's answer).

    Example::

        metric = PromptMetric(feedback=True)
        metric(example, student(**example.inputs())).feedback  # "... attributed to the retrieve module ..."

    Args:
        feedback: return ``dspy.Prediction(score=..., feedback=...)`` (GEPA's metric) instead of the score.
    """

    def __init__(self, feedback: bool = False):
        self.feedback = feedback
        self.calls = 0

    def __call__(self, example: Any, pred: Any, trace: Any = None, pred_name: str | None = None,
                 pred_trace: Any = None) -> Any:
        self.calls += 1
        score = float(getattr(pred, "score", 0.0) or 0.0) if pred is not None else 0.0
        if not self.feedback:
            return score
        return dspy.Prediction(score=score, feedback=feedback_text(example, pred, pred_name))


def feedback_text(example: Any, pred: Any, pred_name: str | None = None) -> str:
    """What went right or wrong on one question, in words a reflection LM can act on."""
    outcome = getattr(pred, "outcome", None) if pred is not None else None
    question = getattr(example, "question", "")
    gold = getattr(example, "answer", "")
    if outcome is None:
        return f"The program produced no scored answer to {question!r} (gold answer {gold!r}): score 0."
    ev = outcome.evidence
    metric = getattr(pred, "metric", "score")
    lines = [f"Question {question!r}; gold answer {gold!r}"
             + (f"; the reader answered {ev.get('prediction')!r}" if "prediction" in ev else "")
             + f". Score {outcome.score:.2f} ({metric})."]
    if ev.get("reader_failed"):
        lines.append("The reader's output could not be parsed (twice): answer with the output field only.")
    owner = None
    if outcome.success:
        lines.append("This answer counts as correct.")
    elif outcome.attribution:
        owner, why = STAGES[outcome.attribution]
        lines.append(f"Failure attributed to the {outcome.attribution} module ({owner}): {why}.")
        if ev.get("gold_rank"):
            lines.append(f"The gold evidence ranked {ev['gold_rank']} in a deeper read; {ev.get('read_items')} "
                         f"items were read.")
    elif ev.get("reason") == "all gold evidence retrieved":
        owner = "reader"
        lines.append("Failure attributed to the reader: all gold evidence was retrieved into the context, "
                     "yet the answer was wrong.")
    else:
        lines.append(f"Failure not attributed to a memory module ({ev.get('reason', 'no gold evidence')}).")
    missed = list(getattr(pred, "missed", None) or [])
    if missed:
        lines.append("Gold evidence missed: " + "; ".join(
            f"[{sid}] {text[:QUOTE_CHARS]}" if text else f"[{sid}]" for sid, text in missed[:MISSED_SHOWN])
            + (f" (and {len(missed) - MISSED_SHOWN} more)" if len(missed) > MISSED_SHOWN else ""))
    if pred_name and owner and not outcome.success:
        name = prompt_name(pred_name)
        role = name.split(".")[0].split(":")[0]
        lines.append(f"This predictor ({name}) belongs to the {role}; "
                     + ("it is the part the failure was attributed to." if role == owner
                        else f"the failure was attributed to the {owner}, not to it."))
    return " ".join(lines)

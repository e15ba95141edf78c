"""The LM side of conversational scoring: a reader that answers a question from the retrieved
context (scored with LoCoMo's F1) and an optional LM judge (correct / wrong, as in Mem0's
LoCoMo evaluation). Both are typed DSPy Signatures run under ``resources.lm_context()``."""
from __future__ import annotations

import logging
from typing import Any

import dspy

log = logging.getLogger(__name__)


class AnswerFromMemory(dspy.Signature):
    """Answer the question about the conversation using only the memory context. Give a short
    answer (a few words, a date or a name). If the context does not contain the answer, answer
    exactly: No information available."""

    context: str = dspy.InputField(desc="what memory returned for the question")
    question: str = dspy.InputField()
    answer: str = dspy.OutputField(desc="short answer, or 'No information available.'")


class JudgeAnswer(dspy.Signature):
    """Decide whether the response answers the question as the gold answer does. Be generous
    with wording and format (dates in another format, extra detail) but strict on the facts."""

    question: str = dspy.InputField()
    gold_answer: str = dspy.InputField()
    response: str = dspy.InputField()
    correct: bool = dspy.OutputField(desc="true iff the response states the gold answer")


def _call(predictor: dspy.Module, resources: Any, lm: Any, what: str, **inputs: Any) -> Any | None:
    """One call, one corrective retry with a nudge, then None (the caller's LM-free path)."""
    for attempt in range(2):
        try:
            with resources.lm_context(), dspy.context(lm=lm or resources.lm):
                if attempt:  # a changed input, so the retry is not answered from DSPy's cache
                    inputs = {**inputs, "question": inputs.get("question", "") +
                              "\n(Reply with the JSON object of the output fields only.)"}
                return predictor(**inputs)
        except (ValueError, dspy.utils.exceptions.AdapterParseError) as exc:
            log.info("%s: unparseable LM answer (attempt %d): %s", what, attempt + 1, exc)
    log.warning("%s: LM answer unusable after a corrective retry; falling back", what)
    return None


class MemoryReader(dspy.Module):
    """Answers from the retrieved context with the task LM.

    Example::

        reader = MemoryReader(resources)
        reader("Caroline: I moved to Boston.", "Where does Caroline live?")   # 'Boston'

    Unparseable twice -> None, a failed query (never the abstention answer, which would score 1.0
    on an adversarial question); counted in ``fallbacks`` of ``lm_requests``.
    """

    def __init__(self, resources: Any):
        super().__init__()
        self.resources = resources
        self.answer = dspy.Predict(AnswerFromMemory)
        self.fallbacks = 0
        self.lm_requests = 0

    def forward(self, context: str, question: str) -> str | None:
        self.lm_requests += 1
        out = _call(self.answer, self.resources, None, "reader", context=context or "(empty)", question=question)
        if out is None or not isinstance(out.answer, str):
            self.fallbacks += 1
            return None
        return out.answer.strip()


class AnswerJudge(dspy.Module):
    """LM judge of a reader's answer against the gold answer (judge role LM when configured)."""

    def __init__(self, resources: Any, lm: Any = None):
        super().__init__()
        self.resources = resources
        self.lm = lm or resources.extra.get("judge_lm") or resources.lm
        self.judge = dspy.Predict(JudgeAnswer)
        self.fallbacks = 0
        self.lm_requests = 0

    def forward(self, question: str, gold: str, response: str) -> bool | None:
        self.lm_requests += 1
        out = _call(self.judge, self.resources, self.lm, "judge", question=question, gold_answer=gold,
                    response=response)
        if out is None or not isinstance(out.correct, bool):
            self.fallbacks += 1
            return None
        return out.correct

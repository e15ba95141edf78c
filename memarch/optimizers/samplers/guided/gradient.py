"""The textual gradient: the diagnosis turned into one direction for the next round —
{primary_signal, confidence, recommended_action, evidence_ids, reasoning} — by rules, or by the
diagnoser LM (typed Signature) with the rules as the fallback."""
from __future__ import annotations

import logging
from typing import Literal

from pydantic import BaseModel, Field

from memarch.benchmarks.evaluation.diagnosis import Diagnosis

logger = logging.getLogger(__name__)

Module = Literal["encode", "store", "retrieve", "manage"]


class TextualGradient(BaseModel):
    """Where the failures point and what to change.

    Example::

        TextualGradient(primary_signal="retrieve", confidence="high",
                        recommended_action="retrieve: hybrid -> mmr",
                        evidence_ids=["q12", "q40"], reasoning="31 of 40 failures were not retrieved")
    """

    primary_signal: Module
    confidence: Literal["high", "medium", "low"]
    recommended_action: str = Field(description="one coordinate edit, 'field: old -> new'")
    evidence_ids: list[str] = Field(default_factory=list)
    reasoning: str = ""


def confidence_of(diagnosis: Diagnosis, module: str) -> str:
    share = diagnosis.share(module)
    attributed = sum(diagnosis.histogram.values())
    if attributed >= 10 and share >= 0.6:
        return "high"
    if attributed >= 3 and share >= 0.35:
        return "medium"
    return "low"


def rule_gradient(diagnosis: Diagnosis, actions: dict[str, str]) -> TextualGradient:
    """The LM-free gradient: the module with the most attributed failures that still has an edit
    (``actions``: module -> best untried edit text)."""
    ranked = [m for m in diagnosis.ranked() if m in actions] or diagnosis.ranked()
    primary = ranked[0]
    ids = (diagnosis.evidence_ids.get(primary) or [e["query_id"] for e in diagnosis.examples
                                                   if e["module"] == primary])[:5]
    n = diagnosis.histogram.get(primary, 0)
    total = sum(diagnosis.histogram.values())
    return TextualGradient(
        primary_signal=primary, confidence=confidence_of(diagnosis, primary),
        recommended_action=actions.get(primary, ""), evidence_ids=ids,
        reasoning=(f"{n} of {total} attributed failures of {diagnosis.architecture} were lost in "
                   f"'{primary}' ({diagnosis.unattributed} unattributed failures gated out)"))

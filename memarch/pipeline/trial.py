"""`TrialResult`: what evaluating one architecture on one benchmark split produces — its score
(the metric's value), named scores, per-category scores, cost, per-query outcomes and the failure
attribution (which module lost the answer) that the guided search diagnoses."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from memarch.pipeline.architecture import Architecture

MODULES = ("encode", "manage", "store", "retrieve")


@dataclass
class QueryOutcome:
    """One query or task of a trial.

    ``score`` is the query's contribution to the trial's score (0..1); ``attribution`` names the
    module that lost the answer for a failed query (``encode`` / ``manage`` / ``store`` /
    ``retrieve``), or None when it succeeded or could not be attributed; ``evidence`` holds the
    facts behind the attribution (gold ids, which were encoded, kept, stored, retrieved).
    """

    query_id: str
    score: float
    success: bool
    category: str = ""
    attribution: str | None = None
    evidence: dict[str, Any] = field(default_factory=dict)
    retrieved_ids: list[str] = field(default_factory=list)


@dataclass
class TrialResult:
    """One evaluation: ``score`` is the value of the metric ``metadata["metric"]`` names (the mean of
    the outcomes' scores); ``scores`` holds every named score of the evaluation."""

    architecture: Architecture | None  # None: the no-memory baseline
    benchmark: str
    split: str
    score: float
    scores: dict[str, float] = field(default_factory=dict)
    per_category: dict[str, float] = field(default_factory=dict)
    cost: dict[str, float] = field(default_factory=dict)  # wall_s, memory_items, lm_calls, tokens_in/out[_role]
    outcomes: list[QueryOutcome] = field(default_factory=list)
    attribution: dict[str, int] = field(default_factory=dict)  # module -> failed queries attributed
    failed: bool = False
    error: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    # LM paths of this trial: answers asked per module role, and how many fell back to the LM-free
    # rule (e.g. {"encoder:fact": 3, "reader": 1}); empty when no LM ran.
    fallbacks: dict[str, int] = field(default_factory=dict)
    lm_requests: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["architecture"] = self.architecture.to_dict() if self.architecture else None
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "TrialResult":
        d = dict(d)
        if "objective" in d and "score" not in d:  # a file written by earlier code (--json, a study)
            d["score"] = d.pop("objective")
        meta = d.get("metadata") or {}
        if "objective" in meta and "metric" not in meta:
            d["metadata"] = {("metric" if k == "objective" else k): v for k, v in meta.items()}
        arch = Architecture.from_dict(d["architecture"]) if d.get("architecture") else None
        outcomes = [QueryOutcome(**o) for o in d.pop("outcomes", [])]
        d.pop("architecture", None)
        return cls(architecture=arch, outcomes=outcomes, **d)

    def failures(self) -> list[QueryOutcome]:
        return [o for o in self.outcomes if not o.success]


"""The diagnosis of a trial: which module lost the failed queries (the per-module histogram of
`QueryOutcome.attribution`), with example failures; failures no module caused are gated out."""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field

from memarch.pipeline.trial import MODULES, TrialResult

MAX_EXAMPLES = 6


@dataclass
class Diagnosis:
    """Failure histogram of one architecture's trial.

    Example::

        d = diagnose(result)
        d.histogram        # {"retrieve": 31, "encode": 9, "manage": 0, "store": 0}
        d.ranked()         # ["retrieve", "encode", ...]
    """

    architecture: str
    score: float  # the trial's score (its metric's value)
    histogram: dict[str, int]
    failures: int
    unattributed: int
    examples: list[dict] = field(default_factory=list)
    evidence_ids: dict[str, list[str]] = field(default_factory=dict)  # module -> a few failed query ids

    def ranked(self) -> list[str]:
        """Modules by attributed failures, most first; ties in the fixed MODULES order."""
        return sorted(MODULES, key=lambda m: (-self.histogram.get(m, 0), MODULES.index(m)))

    def share(self, module: str) -> float:
        total = sum(self.histogram.values())
        return self.histogram.get(module, 0) / total if total else 0.0

    def to_dict(self) -> dict:
        return asdict(self)


def diagnose(result: TrialResult) -> Diagnosis:
    """Histogram from per-query attribution; falls back to the result's own ``attribution`` counts
    when outcomes are not available."""
    failures = result.failures()
    hist = Counter(o.attribution for o in failures if o.attribution in MODULES)
    if not failures and result.attribution:
        hist = Counter({m: int(c) for m, c in result.attribution.items() if m in MODULES})
    unattributed = sum(1 for o in failures if o.attribution not in MODULES)
    # Examples from the top modules first: what the diagnoser LM (or a human) reads.
    order = {m: i for i, m in enumerate(sorted(hist, key=lambda m: -hist[m]))}
    examples = sorted((o for o in failures if o.attribution in MODULES),
                      key=lambda o: (order.get(o.attribution, 99), o.score))[:MAX_EXAMPLES]
    ids: dict[str, list[str]] = {}
    for o in sorted(failures, key=lambda o: o.score):
        if o.attribution in MODULES and len(ids.setdefault(o.attribution, [])) < MAX_EXAMPLES:
            ids[o.attribution].append(o.query_id)
    return Diagnosis(
        architecture=result.architecture.key() if result.architecture else "no-memory",
        score=result.score,
        histogram={m: int(hist.get(m, 0)) for m in MODULES},
        failures=len(failures) if failures else sum(hist.values()),
        unattributed=unattributed,
        examples=[{"query_id": o.query_id, "module": o.attribution, "category": o.category,
                   "score": o.score, "evidence": o.evidence} for o in examples],
        evidence_ids=ids,
    )

"""`TrialRecord` and `History`: the evaluated trials of a study as the strategies read them. A
compact form of each `TrialResult` lives in the trial's user attrs, so every worker process (and a
resumed study) sees the same history."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memarch.pipeline.architecture import Architecture
from memarch.pipeline.trial import QueryOutcome, TrialResult

if TYPE_CHECKING:
    import optuna

RESULT_ATTR = "result"
ARCH_ATTR = "architecture"
# Enough example failures for a diagnosis; the rest of the evidence stays in the in-process result.
MAX_EVIDENCE_KEYS = 8


def cost_of(result: TrialResult) -> float:
    """The one cost number the Pareto front uses: tokens when an LM ran, else memory size."""
    c = result.cost or {}
    tokens = sum(v for k, v in c.items() if k.startswith("tokens"))
    return float(tokens) if tokens else float(c.get("memory_items", 0.0))


def compact(result: TrialResult) -> dict[str, Any]:
    """A JSON-able summary of a result: outcomes without bulky retrieval lists."""
    outs = []
    for o in result.outcomes:
        ev = {k: v for k, v in list((o.evidence or {}).items())[:MAX_EVIDENCE_KEYS]
              if isinstance(v, (str, int, float, bool, list)) and len(str(v)) < 200}
        outs.append([o.query_id, round(float(o.score), 4), bool(o.success), o.category, o.attribution, ev])
    return {"objective": result.objective, "scores": result.scores, "per_category": result.per_category,
            "cost": result.cost, "attribution": result.attribution, "outcomes": outs,
            "benchmark": result.benchmark, "split": result.split,
            "fallbacks": result.fallbacks, "lm_requests": result.lm_requests,
            "objective_name": result.metadata.get("objective")}


def expand(arch: Architecture | None, data: dict[str, Any]) -> TrialResult:
    outcomes = [QueryOutcome(query_id=q, score=s, success=ok, category=c, attribution=a, evidence=ev)
                for q, s, ok, c, a, ev in data.get("outcomes", [])]
    return TrialResult(architecture=arch, benchmark=data.get("benchmark", ""), split=data.get("split", ""),
                       objective=float(data["objective"]), scores=data.get("scores", {}),
                       per_category=data.get("per_category", {}), cost=data.get("cost", {}),
                       outcomes=outcomes, attribution=data.get("attribution", {}),
                       fallbacks=data.get("fallbacks", {}), lm_requests=data.get("lm_requests", {}),
                       metadata={"objective": data["objective_name"]} if data.get("objective_name") else {})


@dataclass
class TrialRecord:
    """One evaluated trial: its number, architecture, objective, cost and (compact) result."""

    number: int
    architecture: Architecture
    objective: float
    cost: float
    result: TrialResult
    role: str = ""  # who proposed it: random / tpe / bruteforce / exploit / explore / lm / seed
    edit: str = ""  # the coordinate edit a guided proposal made, e.g. "retrieve: hybrid -> mmr"
    parent: str = ""  # architecture key the edit was applied to


@dataclass
class History:
    """The completed trials of a study, in trial order."""

    records: list[TrialRecord] = field(default_factory=list)

    @classmethod
    def from_study(cls, study: "optuna.Study") -> "History":
        from optuna.trial import TrialState

        records = []
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
            if ARCH_ATTR not in t.user_attrs or RESULT_ATTR not in t.user_attrs:
                continue
            arch = Architecture.from_dict(t.user_attrs[ARCH_ATTR])
            result = expand(arch, t.user_attrs[RESULT_ATTR])
            records.append(TrialRecord(t.number, arch, result.objective, cost_of(result), result,
                                       role=t.user_attrs.get("role", ""), edit=t.user_attrs.get("edit", ""),
                                       parent=t.user_attrs.get("parent", "")))
        return cls(records)

    def __len__(self) -> int:
        return len(self.records)

    def tried(self) -> set[str]:
        return {r.architecture.key() for r in self.records}

    def best(self) -> TrialRecord | None:
        return max(self.records, key=lambda r: (r.objective, -r.number), default=None)

    def by_key(self, key: str) -> TrialRecord | None:
        for r in self.records:
            if r.architecture.key() == key:
                return r
        return None

    def best_so_far(self) -> list[float]:
        out, best = [], float("-inf")
        for r in self.records:
            best = max(best, r.objective)
            out.append(best)
        return out

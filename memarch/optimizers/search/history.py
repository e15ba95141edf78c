"""`TrialRecord` and `History`: the distinct evaluated architectures of a study as the strategies
read them. A compact form of each `TrialResult` lives in the trial's user attrs, so every worker
process (and a resumed study) sees the same history; a `HistoryCache` expands each trial once."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from memarch.benchmarks.evaluation.costs import lm_tokens
from memarch.pipeline.architecture import Architecture
from memarch.optimizers.search.objectives import OLD_COSTS
from memarch.pipeline.trial import QueryOutcome, TrialResult

if TYPE_CHECKING:
    import optuna

RESULT_ATTR = "result"
ARCH_ATTR = "architecture"
REPEAT_ATTR = "repeat_of"  # a trial that re-drew an evaluated architecture: not a new evaluation
FIDELITY_ATTR = "fidelity"  # share of the split's instances a trial evaluated (a pruned trial's < 1)
PROPOSAL_PREFIX = "memarch:"  # system attrs a sampler sets on the trials it proposes
# Enough example failures for a diagnosis; the rest of the evidence stays in the in-process result.
MAX_EVIDENCE_KEYS = 8
# What the diagnosis and the guided numeric moves read, always kept (besides the first
# MAX_EVIDENCE_KEYS others): without them a stored trial could never back a top_k or pack move.
DIAGNOSIS_KEYS = ("question", "gold_answer", "gold", "retrieved_sources", "reason", "gold_rank", "rank_depth",
                  "read_items", "top_k", "gold_dense_rank", "gold_lexical_rank", "gold_session_rank",
                  "gold_rank_in_sessions", "gold_stem_only", "loss_stage")


def cost_of(result: TrialResult) -> float:
    """The one cost number the Pareto front uses: LM tokens when an LM ran (`lm_tokens`: each once,
    not the per-role counts on top of their totals), else memory size."""
    c = result.cost or {}
    spent = lm_tokens(c)
    return spent if spent else float(c.get("memory_items", 0.0))


def compact(result: TrialResult) -> dict[str, Any]:
    """A JSON-able summary of a result: outcomes without bulky retrieval lists."""
    outs = []
    for o in result.outcomes:
        evidence = o.evidence or {}
        keys = [k for k in DIAGNOSIS_KEYS if k in evidence]
        keys += [k for k in list(evidence)[:MAX_EVIDENCE_KEYS] if k not in keys]
        ev = {k: evidence[k] for k in keys
              if (evidence[k] is None or isinstance(evidence[k], (str, int, float, bool, list)))
              and len(str(evidence[k])) < 200}
        outs.append([o.query_id, round(float(o.score), 4), bool(o.success), o.category, o.attribution, ev])
    return {"score": result.score, "scores": result.scores, "per_category": result.per_category,
            "cost": result.cost, "attribution": result.attribution, "outcomes": outs,
            "benchmark": result.benchmark, "split": result.split,
            "fallbacks": result.fallbacks, "lm_requests": result.lm_requests,
            "metric": result.metadata.get("metric", "")}


def expand(arch: Architecture | None, data: dict[str, Any] | str) -> TrialResult:
    """The `TrialResult` back from `compact` (or its JSON string, as trials store it)."""
    if isinstance(data, str):
        data = json.loads(data)
    outcomes = [QueryOutcome(query_id=q, score=s, success=ok, category=c, attribution=a, evidence=ev)
                for q, s, ok, c, a, ev in data.get("outcomes", [])]
    # A study saved by earlier code: "objective" / "objective_name" / "memory_tokens" are its keys.
    metric = data.get("metric", data.get("objective_name"))
    meta = {"metric": metric} if metric else {}
    cost = {OLD_COSTS.get(k, k): v for k, v in (data.get("cost") or {}).items()}
    return TrialResult(architecture=arch, benchmark=data.get("benchmark", ""), split=data.get("split", ""),
                       score=float(data["score"] if "score" in data else data["objective"]), scores=data.get("scores", {}),
                       per_category=data.get("per_category", {}), cost=cost,
                       outcomes=outcomes, attribution=data.get("attribution", {}),
                       fallbacks=data.get("fallbacks", {}), lm_requests=data.get("lm_requests", {}),
                       metadata=meta)


@dataclass
class TrialRecord:
    """One evaluated architecture: its first trial's number, score, cost and (compact) result."""

    number: int
    architecture: Architecture
    score: float
    cost: float
    result: TrialResult
    role: str = ""  # who proposed it: warm_start / random / tpe / exploit / explore / lm / ...
    edit: str = ""  # the coordinate edit a guided proposal made, e.g. "retrieve: hybrid -> mmr"
    parent: str = ""  # architecture key the edit was applied to
    fidelity: float = 1.0  # share of the split's instances scored (< 1: a pruned trial's partial result)
    _scores: dict[str, float] | None = field(default=None, repr=False)

    def scores_by_query(self) -> dict[str, float]:
        if self._scores is None:
            self._scores = {o.query_id: float(o.score) for o in self.result.outcomes}
        return self._scores


def proposal_attr(trial: Any, name: str) -> str:
    """A proposal field of a trial: the user attr (enqueued trials, user code) or the system attr a
    sampler set (``memarch:role``)."""
    value = trial.user_attrs.get(name)
    if value is None:
        value = trial.system_attrs.get(PROPOSAL_PREFIX + name, "")
    return str(value or "")


class HistoryCache:
    """Expanded records by trial number, so a study's history is parsed once per trial, plus a memo of
    paired comparisons (pure functions of two trials' outcomes)."""

    def __init__(self) -> None:
        self.records: dict[int, TrialRecord] = {}
        self.paired: dict[tuple[int, int], tuple[int, int, int]] = {}

    def record(self, trial: Any) -> TrialRecord:
        rec = self.records.get(trial.number)
        if rec is None:
            arch = Architecture.from_dict(trial.user_attrs[ARCH_ATTR])
            result = expand(arch, trial.user_attrs[RESULT_ATTR])
            rec = TrialRecord(trial.number, arch, result.score, cost_of(result), result,
                              role=proposal_attr(trial, "role"), edit=proposal_attr(trial, "edit"),
                              parent=proposal_attr(trial, "parent"),
                              fidelity=float(trial.user_attrs.get("fidelity", 1.0)))
            self.records[trial.number] = rec
        return rec


@dataclass
class History:
    """The distinct evaluated architectures of a study, in trial order (a repeat of an architecture
    is not a new record; ``repeats`` counts them). ``partial``: the architectures a pruner stopped
    (`fidelity.py`), each with the outcomes of the instances it saw and its ``fidelity`` < 1 — never
    a pick, a parent or a front member, but tried (never proposed again) and evidence for the
    guided ledger."""

    records: list[TrialRecord] = field(default_factory=list)
    repeats: int = 0
    cache: HistoryCache = field(default_factory=HistoryCache, repr=False)
    partial: list[TrialRecord] = field(default_factory=list)

    @classmethod
    def from_study(cls, study: "optuna.Study", cache: HistoryCache | None = None) -> "History":
        from optuna.trial import TrialState

        cache = cache or HistoryCache()
        records, seen, repeats, partial = [], set(), 0, []
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)):
            if t.state == TrialState.PRUNED:
                if "fidelity" in t.user_attrs and REPEAT_ATTR not in t.user_attrs and RESULT_ATTR in t.user_attrs:
                    partial.append(cache.record(t))
                continue
            if REPEAT_ATTR in t.user_attrs:
                repeats += 1
                continue
            if ARCH_ATTR not in t.user_attrs or RESULT_ATTR not in t.user_attrs:
                continue
            rec = cache.record(t)
            key = rec.architecture.key()
            if key in seen:  # two workers raced on one architecture: the first trial is the record
                repeats += 1
                continue
            seen.add(key)
            records.append(rec)
        return cls(records, repeats, cache, partial)

    def __len__(self) -> int:
        return len(self.records)

    def tried(self) -> set[str]:
        """Keys of the evaluated architectures (computed once: records are not added afterwards)."""
        cached = self.__dict__.get("_tried")
        if cached is None or cached[0] != (len(self.records), len(self.partial)):
            cached = ((len(self.records), len(self.partial)), frozenset(r.architecture.key() for r in self.records + self.partial))
            self.__dict__["_tried"] = cached
        return set(cached[1])

    def best(self) -> TrialRecord | None:
        return max(self.records, key=lambda r: (r.score, -r.cost, -r.number), default=None)

    def by_key(self, key: str) -> TrialRecord | None:
        for r in self.records:
            if r.architecture.key() == key:
                return r
        return None

    def has(self, key: str) -> bool:
        self.tried()
        return key in self.__dict__["_tried"][1]

    def best_so_far(self) -> list[float]:
        out, best = [], float("-inf")
        for r in self.records:
            best = max(best, r.score)
            out.append(best)
        return out

    def paired(self, a: TrialRecord, b: TrialRecord) -> tuple[int, int, int]:
        """(wins of a, losses of a, shared queries) over the queries both were scored on."""
        key = (a.number, b.number)
        hit = self.cache.paired.get(key)
        if hit is None:
            sa, sb = a.scores_by_query(), b.scores_by_query()
            shared = [q for q in sa if q in sb]
            if shared:
                d = np.fromiter((sa[q] for q in shared), float, len(shared)) - \
                    np.fromiter((sb[q] for q in shared), float, len(shared))
                hit = (int((d > 1e-9).sum()), int((d < -1e-9).sum()), len(shared))
            else:
                hit = (0, 0, 0)
            self.cache.paired[key] = hit
        return hit


def fidelity_of(trial: Any) -> float:
    """What a finished trial cost in full evaluations: 1 for a complete evaluation, the share of
    instances seen for a pruned one, 0 for anything that evaluated nothing (invalid, repeat, failed)."""
    from optuna.trial import TrialState

    attrs = trial.user_attrs
    if REPEAT_ATTR in attrs or RESULT_ATTR not in attrs:
        return 0.0
    if trial.state == TrialState.COMPLETE:
        return float(attrs.get(FIDELITY_ATTR, 1.0))
    if trial.state == TrialState.PRUNED and FIDELITY_ATTR in attrs:
        return float(attrs[FIDELITY_ATTR])
    return 0.0

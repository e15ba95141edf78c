"""Multi-fidelity evaluation: a trial is scored instance by instance (a dialogue of a conversation
benchmark, in the split's fixed stream order), reports to Optuna's pruner as it goes, and stops
when the pruner says so. A pruned trial keeps its partial outcomes (state PRUNED, the share of
instances it saw in ``fidelity``) and costs that share of a full evaluation: budgets are counted
in full-evaluation equivalents.

What a pruner is told (``trial.report(value, step)``):

- ``median``, ``sha``, ``hyperband``: the running mean score after ``step`` instances.
- ``wilcoxon``: each instance's own mean score at ``step`` = the instance's position, the form
  `optuna.pruners.WilcoxonPruner` is made for (a study's objective that is a mean over instances).

Example::

    study = optuna.create_study(direction="maximize", pruner=make_pruner("wilcoxon"))
    search = Search(metric, space, budget=20, pruner="wilcoxon")   # budget: full evaluations
"""
from __future__ import annotations

from collections import Counter
from typing import Callable

import optuna

from memarch.optimizers.pruners.names import check_pruner
from memarch.pipeline.trial import MODULES, QueryOutcome, TrialResult

OnInstance = Callable[[int, int, list[float]], bool]  # (instances done, total, scores of the last) -> stop?


class InstanceReporter:
    """The ``on_instance`` callback of one trial: reports each finished instance to the trial's
    pruner and answers whether to stop (``trial.should_prune()``)."""

    def __init__(self, trial: optuna.Trial, pruner: str):
        self.trial = trial
        self.pruner = check_pruner(pruner)
        self.done = 0
        self.total = 0
        self.total_score = 0.0
        self.questions = 0
        self.stopped = False

    @property
    def fidelity(self) -> float:
        return self.done / self.total if self.total else 1.0

    def __call__(self, done: int, total: int, scores: list[float]) -> bool:
        self.done, self.total = int(done), int(total)
        self.total_score += float(sum(scores))
        self.questions += len(scores)
        if self.pruner == "wilcoxon":
            if not scores:  # an instance without scored questions says nothing
                return False
            self.trial.report(sum(scores) / len(scores), step=done - 1)
        else:
            self.trial.report(self.total_score / max(1, self.questions), step=done)
        if done >= total:
            return False  # complete: nothing left to save
        self.stopped = bool(self.trial.should_prune())
        return self.stopped


def instance_of(query_id: str) -> str:
    """The instance a question belongs to: its dialogue (the ``namespace/`` prefix of the id)."""
    head, sep, _ = str(query_id).partition("/")
    return head if sep else ""


def staged(result: TrialResult, on_instance: OnInstance) -> TrialResult:
    """Replay a full result instance by instance (a landscape lookup, a cached evaluation): calls
    ``on_instance`` after each and returns the partial result where it asks to stop, else ``result``."""
    groups: dict[str, list[QueryOutcome]] = {}
    for o in result.outcomes:
        groups.setdefault(instance_of(o.query_id), []).append(o)
    seen: list[QueryOutcome] = []
    for i, outs in enumerate(groups.values(), start=1):
        seen.extend(outs)
        if on_instance(i, len(groups), [float(o.score) for o in outs]):
            return partial_result(result, seen, i, len(groups))
    return result


def partial_result(result: TrialResult, outcomes: list[QueryOutcome], done: int, total: int) -> TrialResult:
    """``result`` cut to ``outcomes`` (the first ``done`` of ``total`` instances): score, per
    category and attribution recomputed on them; costs and other scores are dropped (they belong to
    the whole split)."""
    n = len(outcomes)
    by_cat: dict[str, list[float]] = {}
    for o in outcomes:
        by_cat.setdefault(o.category, []).append(float(o.score))
    lost = Counter(o.attribution for o in outcomes if not o.success and o.attribution)
    meta = dict(result.metadata)
    meta["instances"] = {"done": done, "total": total}
    return TrialResult(architecture=result.architecture, benchmark=result.benchmark, split=result.split,
                       score=sum(float(o.score) for o in outcomes) / n if n else 0.0,
                       scores={"questions": float(n)},
                       per_category={c: sum(v) / len(v) for c, v in sorted(by_cat.items())},
                       cost={}, outcomes=list(outcomes), attribution={m: lost.get(m, 0) for m in MODULES},
                       metadata=meta)

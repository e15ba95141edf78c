"""Multi-fidelity evaluation: a trial is scored instance by instance (a dialogue of a conversation
benchmark, in the split's fixed stream order), reports to Optuna's pruner as it goes, and stops
when the pruner says so. A pruned trial keeps its partial outcomes (state PRUNED, the share of
instances it saw in ``fidelity``) and costs that share of a full evaluation: budgets are counted
in full-evaluation equivalents.

What a pruner is told (``trial.report(value, step)``):

- ``median``, ``sha``, ``hyperband``: the running mean score after ``step`` instances.
- ``wilcoxon``: each instance's own mean score at ``step`` = the instance's position, the form
  `optuna.pruners.WilcoxonPruner` is made for (an objective that is a mean over instances).

Example::

    study = optuna.create_study(direction="maximize", pruner=make_pruner("wilcoxon"))
    search = Search(metric, space, budget=20, pruner="wilcoxon")   # budget: full evaluations
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Callable

import optuna

from memarch.errors import MemarchError
from memarch.pipeline.trial import MODULES, QueryOutcome, TrialResult

PRUNERS = ("none", "median", "sha", "hyperband", "wilcoxon")
FIDELITY_ATTR = "fidelity"  # share of the split's instances a trial evaluated (a pruned trial's < 1)

OnInstance = Callable[[int, int, list[float]], bool]  # (instances done, total, scores of the last) -> stop?


def check_pruner(name: str | None) -> str:
    name = (name or "none").lower()
    if name not in PRUNERS:
        raise MemarchError(f"unknown pruner {name!r}; expected one of {', '.join(PRUNERS)}")
    return name


def make_pruner(name: str | None, instances: int | None = None) -> optuna.pruners.BasePruner:
    """The Optuna pruner for ``name`` (`PRUNERS`); ``instances``: how many a full evaluation has
    (Hyperband's maximum resource; ``auto`` when unknown)."""
    name = check_pruner(name)
    if name == "none":
        return optuna.pruners.NopPruner()
    if name == "median":  # below the median of earlier trials at the same step, once 5 trials finished
        return optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=0)
    if name == "sha":
        return optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3)
    if name == "hyperband":
        return optuna.pruners.HyperbandPruner(min_resource=1, max_resource=instances or "auto", reduction_factor=3)
    import warnings

    with warnings.catch_warnings():  # experimental in Optuna: said in the docs, not on every study
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.pruners.WilcoxonPruner(p_threshold=0.1, n_startup_steps=2)


def supports_instances(metric: Any) -> bool:
    """Whether ``metric(arch, data, on_instance=...)`` scores instance by instance."""
    check = getattr(metric, "supports_instances", None)
    return bool(check()) if callable(check) else False


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
    """``result`` cut to ``outcomes`` (the first ``done`` of ``total`` instances): objective, per
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
                       objective=sum(float(o.score) for o in outcomes) / n if n else 0.0,
                       scores={"questions": float(n)},
                       per_category={c: sum(v) / len(v) for c, v in sorted(by_cat.items())},
                       cost={}, outcomes=list(outcomes), attribution={m: lost.get(m, 0) for m in MODULES},
                       metadata=meta)


def fidelity_of(trial: Any) -> float:
    """What a finished trial cost in full evaluations: 1 for a complete evaluation, the share of
    instances seen for a pruned one, 0 for anything that evaluated nothing (invalid, repeat, failed)."""
    from optuna.trial import TrialState

    from memarch.optimizers.search.history import REPEAT_ATTR, RESULT_ATTR

    attrs = trial.user_attrs
    if REPEAT_ATTR in attrs or RESULT_ATTR not in attrs:
        return 0.0
    if trial.state == TrialState.COMPLETE:
        return float(attrs.get(FIDELITY_ATTR, 1.0))
    if trial.state == TrialState.PRUNED and FIDELITY_ATTR in attrs:
        return float(attrs[FIDELITY_ATTR])
    return 0.0

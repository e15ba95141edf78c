"""The pruners by name (``--pruner``): each is an Optuna pruner, told the running score of a trial
instance by instance (`memarch.optimizers.pruners.instances`)."""
from __future__ import annotations

import optuna

from memarch.errors import MemarchError

PRUNERS = ("none", "median", "sha", "hyperband", "wilcoxon")


def check_pruner(name: str | None) -> str:
    """``name`` (lower-cased; None: ``none``) if it is a pruner, else `MemarchError` naming them."""
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

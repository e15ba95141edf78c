"""The strategies by name. Every strategy is an Optuna sampler (the one contract they all honour):
``random``, ``tpe``, ``tpe-multivariate``, ``tpe-independent``, ``nsga2``, ``nsga3``, ``gp`` and ``qmc`` are Optuna's,
``bruteforce`` enumerates the valid space, ``guided`` is AutoMem's `GuidedSampler`, ``hybrid`` is TPE
steered by guided's diagnosis (`HybridSampler`, the "Centaur" shape). The registry is
what `compile`, `compare` and `landscape replay` offer; `UNSUPPORTED` names Optuna samplers that do not
fit this space and why (docs/search.md, "Optuna's samplers as baselines")."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import optuna

from memarch.errors import MemarchError

NSGA2_POPULATION = 10
NSGA3_POPULATION = NSGA2_POPULATION

if TYPE_CHECKING:
    from memarch.optimizers.search.param_space import ParamSpace


def _random(space: "ParamSpace", seed: int | None, **_: Any) -> optuna.samplers.BaseSampler:
    return optuna.samplers.RandomSampler(seed=seed)


def _tpe(space: "ParamSpace", seed: int | None, **_: Any) -> optuna.samplers.BaseSampler:
    # Defaults (10 random start-up trials); constant_liar keeps parallel workers apart.
    return optuna.samplers.TPESampler(seed=seed, constant_liar=True)


def _nsga2(space: "ParamSpace", seed: int | None, **_: Any) -> optuna.samplers.BaseSampler:
    # Generations of 10: budgets here are 20-40 distinct architectures, and Optuna's default of 50
    # would leave NSGA-II drawing its random first generation for the whole budget.
    return optuna.samplers.NSGAIISampler(seed=seed, population_size=NSGA2_POPULATION)


def _tpe_multivariate(space: "ParamSpace", seed: int | None, **_: Any) -> optuna.samplers.BaseSampler:
    # Optuna 5's default TPE is already multivariate with one objective (so in the categorical space
    # this draws what `tpe` draws); forcing it makes several objectives joint too, and group=True
    # models each group of conditional knobs (--space full) jointly.
    return optuna.samplers.TPESampler(seed=seed, constant_liar=True, multivariate=True, group=True)


def _tpe_independent(space: "ParamSpace", seed: int | None, **_: Any) -> optuna.samplers.BaseSampler:
    # One Parzen estimator per parameter (Optuna before 5.0, and the classical TPE of the papers):
    # Optuna 5's default is already joint with one objective, so this is the independent baseline.
    return optuna.samplers.TPESampler(seed=seed, constant_liar=True, multivariate=False)


def _nsga3(space: "ParamSpace", seed: int | None, **_: Any) -> optuna.samplers.BaseSampler:
    # Generations of 10 like nsga2, for the same reason.
    return optuna.samplers.NSGAIIISampler(seed=seed, population_size=NSGA3_POPULATION)


def _gp(space: "ParamSpace", seed: int | None, **_: Any) -> optuna.samplers.BaseSampler:
    # GP-BO: categorical parameters get a Hamming-distance kernel term, several objectives use
    # EHVI. Its search space is the intersection over trials, so the conditional knobs of --space
    # full come from its random fallback (the warning per draw is off; docs/search.md says so).
    from memarch.optimizers.samplers.gp import GPBaseline

    return GPBaseline(seed=seed, warn_independent_sampling=False)


def _qmc(space: "ParamSpace", seed: int | None, **_: Any) -> optuna.samplers.BaseSampler:
    # Scrambled Sobol: without scrambling every seed would draw the same sequence. Optuna 5 maps each
    # categorical to one QMC coordinate (a space-filling design, not random draws); the space is the
    # first trial's, so knobs of other modules (--space full) come from its random fallback.
    return optuna.samplers.QMCSampler(qmc_type="sobol", scramble=True, seed=seed if seed is not None else 0,
                                      warn_independent_sampling=False)


def _bruteforce(space: "ParamSpace", seed: int | None, **_: Any) -> optuna.samplers.BaseSampler:
    from memarch.optimizers.samplers.bruteforce import BruteForceSampler

    return BruteForceSampler(space, seed=seed)


def _guided(space: "ParamSpace", seed: int | None, *, k: int = 3, lm: Any = None, meta_lm: Any = None,
            **_: Any) -> optuna.samplers.BaseSampler:
    from memarch.optimizers.samplers.guided.sampler import GuidedSampler

    return GuidedSampler(space, k=k, seed=seed, meta_lm=meta_lm if meta_lm is not None else lm)


def _hybrid(space: "ParamSpace", seed: int | None, **_: Any) -> optuna.samplers.BaseSampler:
    # TPE proposes; guided overrides a trial only where the leader's traces name a module and a move.
    from memarch.optimizers.samplers.guided.hybrid import HybridSampler

    return HybridSampler(space, seed=seed)


def _archive(space: "ParamSpace", seed: int | None, *, k: int = 3, lm: Any = None, meta_lm: Any = None,
             no_memory: Any = None, **_: Any) -> optuna.samplers.BaseSampler:
    # ALMA's archive; no_memory: the no-memory score (a number or a callable; see ArchiveSampler).
    from memarch.optimizers.samplers.guided.archive_sampler import ArchiveSampler

    return ArchiveSampler(space, k=k, seed=seed, meta_lm=meta_lm if meta_lm is not None else lm, no_memory=no_memory)


STRATEGIES: dict[str, Callable[..., optuna.samplers.BaseSampler]] = {
    "guided": _guided,
    "archive": _archive,
    "random": _random,
    "tpe": _tpe,
    "nsga2": _nsga2,
    "bruteforce": _bruteforce,
    "tpe-multivariate": _tpe_multivariate,
    "tpe-independent": _tpe_independent,
    "nsga3": _nsga3,
    "gp": _gp,
    "qmc": _qmc,
    "hybrid": _hybrid,
}

# Optuna samplers that do not fit this space, and why (one line each; `check_strategy` prints it).
UNSUPPORTED: dict[str, str] = {
    "cmaes": "CMA-ES models only float/int parameters: every categorical module choice would come from its "
             "random fallback (it is random search under another name), it refuses several objectives, "
             "and it needs the `cmaes` package, which is not installed",
    "grid": "GridSampler needs every parameter's values listed up front and cannot express conditional "
            "knobs; `bruteforce` enumerates the valid categorical space instead",
    "autosampler": "OptunaHub's AutoSampler is downloaded from the OptunaHub GitHub registry at run time "
                   "(optunahub.load_module), not a package; there is no network here",
}


def check_strategy(name: str) -> str:
    """``name`` if it is a strategy; else `MemarchError` with one line: why an Optuna sampler that does
    not fit is refused, or the strategies on offer."""
    if name in STRATEGIES:
        return name
    if name in UNSUPPORTED:
        raise MemarchError(f"strategy {name!r} is not offered: {UNSUPPORTED[name]}")
    raise MemarchError(f"unknown strategy {name!r}; expected one of {', '.join(STRATEGIES)}")


def make_sampler(name: str, space: "ParamSpace", seed: int | None = 0, **kwargs: Any) -> optuna.samplers.BaseSampler:
    """The sampler of a strategy (``guided`` takes ``k=``, ``meta_lm=`` / ``lm=``).

    Example::

        sampler = make_sampler("tpe", ParamSpace.for_family("conversation"), seed=0)
        study = optuna.create_study(direction="maximize", sampler=sampler)
    """
    return STRATEGIES[check_strategy(name)](space, seed, **kwargs)

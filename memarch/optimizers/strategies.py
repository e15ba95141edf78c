"""The strategies by name. Every strategy is an Optuna sampler (the one contract they all honour):
``random``, ``tpe`` and ``nsga2`` are Optuna's, ``bruteforce`` enumerates the valid space, ``guided`` is
AutoMem's `GuidedSampler`. The registry is what `compile`, `compare` and `landscape replay` offer."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import optuna

from memarch.errors import MemarchError

NSGA2_POPULATION = 10

if TYPE_CHECKING:
    from memarch.optimizers.space import SearchSpace


def _random(space: "SearchSpace", seed: int | None, **_: Any) -> optuna.samplers.BaseSampler:
    return optuna.samplers.RandomSampler(seed=seed)


def _tpe(space: "SearchSpace", seed: int | None, **_: Any) -> optuna.samplers.BaseSampler:
    # Defaults (10 random start-up trials); constant_liar keeps parallel workers apart.
    return optuna.samplers.TPESampler(seed=seed, constant_liar=True)


def _nsga2(space: "SearchSpace", seed: int | None, **_: Any) -> optuna.samplers.BaseSampler:
    # Generations of 10: budgets here are 20-40 distinct architectures, and Optuna's default of 50
    # would leave NSGA-II drawing its random first generation for the whole budget.
    return optuna.samplers.NSGAIISampler(seed=seed, population_size=NSGA2_POPULATION)


def _bruteforce(space: "SearchSpace", seed: int | None, **_: Any) -> optuna.samplers.BaseSampler:
    from memarch.optimizers.bruteforce import BruteForceSampler

    return BruteForceSampler(space, seed=seed)


def _guided(space: "SearchSpace", seed: int | None, *, k: int = 3, lm: Any = None, meta_lm: Any = None,
            **_: Any) -> optuna.samplers.BaseSampler:
    from memarch.optimizers.guided.sampler import GuidedSampler

    return GuidedSampler(space, k=k, seed=seed, meta_lm=meta_lm if meta_lm is not None else lm)


def _archive(space: "SearchSpace", seed: int | None, *, k: int = 3, lm: Any = None, meta_lm: Any = None,
             no_memory: Any = None, **_: Any) -> optuna.samplers.BaseSampler:
    # ALMA's archive; no_memory: the no-memory objective (a number or a callable; see ArchiveSampler).
    from memarch.optimizers.guided.archive_sampler import ArchiveSampler

    return ArchiveSampler(space, k=k, seed=seed, meta_lm=meta_lm if meta_lm is not None else lm, no_memory=no_memory)


STRATEGIES: dict[str, Callable[..., optuna.samplers.BaseSampler]] = {
    "guided": _guided,
    "archive": _archive,
    "random": _random,
    "tpe": _tpe,
    "nsga2": _nsga2,
    "bruteforce": _bruteforce,
}


def make_sampler(name: str, space: "SearchSpace", seed: int | None = 0, **kwargs: Any) -> optuna.samplers.BaseSampler:
    """The sampler of a strategy (``guided`` takes ``k=``, ``meta_lm=`` / ``lm=``).

    Example::

        sampler = make_sampler("tpe", SearchSpace.for_family("conversation"), seed=0)
        study = optuna.create_study(direction="maximize", sampler=sampler)
    """
    try:
        factory = STRATEGIES[name]
    except KeyError:
        raise MemarchError(f"unknown strategy {name!r}; expected one of {', '.join(STRATEGIES)}") from None
    return factory(space, seed, **kwargs)

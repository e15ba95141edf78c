"""`BruteForceSampler`: every valid architecture once, in a seeded random order — the exhaustive
baseline for spaces small enough to enumerate."""
from __future__ import annotations

from memarch.optimizers.search.optuna_internals import whole_study

import random
from typing import TYPE_CHECKING, Any

from optuna.samplers import RandomSampler

from memarch.optimizers.samplers.base import MemarchSampler

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution
    from optuna.study import Study
    from optuna.trial import FrozenTrial

    from memarch.optimizers.search.param_space import ParamSpace


class BruteForceSampler(MemarchSampler):
    """Enumerate the valid space in a seeded order, skipping what the study already holds.

    Example::

        study = optuna.create_study(direction="maximize", sampler=BruteForceSampler(space, seed=0))

    Args:
        space: the `ParamSpace`.
        seed: the enumeration order.
    """

    def __init__(self, space: "ParamSpace", seed: int | None = 0):
        self.space = space
        self.seed = seed
        self._order: list[Any] | None = None
        self._independent = RandomSampler(seed)

    def infer_relative_search_space(self, study: "Study", trial: "FrozenTrial") -> dict[str, "BaseDistribution"]:
        study = whole_study(study)  # a HyperbandPruner bracket: the whole study
        return self.space.all_distributions()  # full space: each architecture at its knobs' defaults

    def sample_relative(self, study: "Study", trial: "FrozenTrial",
                        search_space: dict[str, "BaseDistribution"]) -> dict[str, Any]:
        study = whole_study(study)  # a HyperbandPruner bracket: the whole study
        if not search_space:
            return {}
        if self._order is None:
            self._order = list(self.space.space.enumerate())
            random.Random(self.seed).shuffle(self._order)
        taken = self.space.keys_in(study, exclude=trial.number)
        for arch in self._order:
            if arch.key() not in taken:
                return self.space.to_params(arch)
        return {}

    def sample_independent(self, study: "Study", trial: "FrozenTrial", param_name: str,
                           param_distribution: "BaseDistribution") -> Any:
        study = whole_study(study)  # a HyperbandPruner bracket: the whole study
        return self._independent.sample_independent(study, trial, param_name, param_distribution)

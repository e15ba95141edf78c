"""`GPBaseline`: Optuna's `GPSampler` made to survive memarch's protocol, where invalid draws are
pruned. A pruned trial never reaches the GP, so its acquisition optimum stays where it was and it
proposes the same invalid architecture until the study is stopped as stuck (measured: 429 invalid
draws in a row on the generated landscape). A proposal it already made is drawn at random instead,
and every such draw is counted (``gp_fallback``)."""
from __future__ import annotations

from typing import Any

import optuna
from optuna.distributions import BaseDistribution

from memarch.optimizers.samplers.base import MemarchSampler


class GPBaseline(optuna.samplers.GPSampler, MemarchSampler):
    """`GPSampler` whose repeated proposals go to its random fallback sampler, counted.

    Example::

        sampler = GPBaseline(seed=0)
        study = optuna.create_study(direction="maximize", sampler=sampler)
        study.optimize(trial_function, n_trials=30)
        sampler.stats()   # {"gp_proposals": 20, "gp_fallback": 3}

    Args:
        seed: the seed of the GP's acquisition search and of the fallback.
        **kwargs: passed to `optuna.samplers.GPSampler`.
    """

    def __init__(self, *, seed: int | None = None, **kwargs: Any):
        super().__init__(seed=seed, **kwargs)
        self._proposed: set[tuple] = set()
        self.proposals = 0
        self.fallbacks = 0

    def sample_relative(self, study: optuna.Study, trial: optuna.trial.FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        params = super().sample_relative(study, trial, search_space)
        if not params:
            return params
        key = tuple(sorted((k, repr(v)) for k, v in params.items()))
        if key in self._proposed:
            # An empty relative sample sends every parameter of this trial to the random fallback.
            self.fallbacks += 1
            return {}
        self._proposed.add(key)
        self.proposals += 1
        return params

    def stats(self) -> dict[str, int]:
        """GP proposals and repeated proposals drawn at random instead."""
        return {"gp_proposals": self.proposals, "gp_fallback": self.fallbacks}

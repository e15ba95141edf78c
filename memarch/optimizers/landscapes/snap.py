"""Replaying a *sampled* landscape (``landscape build --sample N``): strategies draw among the
landscape's own architectures, so a replay takes seconds instead of thousands of pruned draws.

- ``random`` is uniform without replacement over the landscape (`random_order`): random search on
  the table, the warm start first.
- Any other strategy proposes as it does on the whole space; a proposal the landscape lacks is
  pruned as before (``not-in-landscape``, counted as invalid) and the nearest landscape architecture
  not yet evaluated or queued is queued for the next trial (`Snap`: fewest differing Optuna params,
  ties broken by the run's seed), counted as ``snapped``. The strategy learns from that trial as from
  any other it did not draw itself (a warm start, an enqueued proposal).

On a landscape that holds every valid architecture nothing is snapped and nothing changes.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import optuna

if TYPE_CHECKING:
    from memarch.optimizers.landscapes.table import Landscape
    from memarch.optimizers.search.param_space import ParamSpace
    from memarch.optimizers.search.runner import Search

NOT_IN_LANDSCAPE = "not-in-landscape"
SNAPPED_ATTR = "snapped_from"


def landscape_architectures(landscape: "Landscape") -> list:
    """The landscape's architectures (the no-memory row left out), in row order."""
    return [a for a in (landscape.architecture(i) for i in range(len(landscape))) if a is not None]


def random_order(landscape: "Landscape", seed: int, skip: set[str]) -> list:
    """The landscape's architectures but ``skip`` in a seeded random order."""
    archs = [a for a in landscape_architectures(landscape) if a.key() not in skip]
    order = np.random.default_rng(seed).permutation(len(archs))
    return [archs[i] for i in order]


class Snap:
    """An Optuna callback of a replay's `Search`: after a trial pruned as ``not-in-landscape``,
    queue the nearest landscape architecture not yet evaluated or queued.

    Example::

        snap = Snap(landscape, param_space, seed=0)
        search = Search(evaluator, param_space, budget=20, callbacks=[snap.attach])
        snap.search = search
        ...
        snap.snapped            # how many proposals were replaced
    """

    def __init__(self, landscape: "Landscape", space: "ParamSpace", *, seed: int):
        self.space = space
        self.archs = landscape_architectures(landscape)
        self.names = sorted({n for a in self.archs for n in space.to_params(a)})
        self.table = np.array([self._row(space.to_params(a)) for a in self.archs], dtype=object)
        self.rng = np.random.default_rng(seed)
        self.search: "Search | None" = None
        self.queued: set[str] = set()
        self.snapped = 0
        self._seen_invalid = 0

    def _row(self, params: dict[str, Any]) -> list[Any]:
        return [params.get(n) for n in self.names]

    def nearest(self, params: dict[str, Any], taken: set[str]) -> Any | None:
        """The landscape architecture closest to ``params`` (fewest differing params) not in ``taken``."""
        free = [i for i, a in enumerate(self.archs) if a.key() not in taken]
        if not free:
            return None
        row = np.array(self._row(params), dtype=object)
        dist = (self.table[free] != row).sum(axis=1)
        best = np.flatnonzero(dist == dist.min())
        return self.archs[free[int(self.rng.choice(best))]]

    def __call__(self, study: optuna.Study, trial: Any) -> None:
        assert self.search is not None, "Snap.search is the Search it serves"
        invalid = self.search.trial_function.invalid
        new, self._seen_invalid = invalid[self._seen_invalid:], len(invalid)
        if not any(rule == NOT_IN_LANDSCAPE for _, _, rule in new) or trial.state != optuna.trial.TrialState.PRUNED:
            return
        params = dict(trial.params)
        taken = {k for _, k in self.search.trial_function.evaluated} | {k for _, k, _ in self.search.trial_function.pruned} \
            | self.queued
        arch = self.nearest(params, taken)
        if arch is None:
            return
        self.queued.add(arch.key())
        self.snapped += 1
        study.enqueue_trial(self.space.to_params(arch), user_attrs={SNAPPED_ATTR: self.space.from_params(params).key()})

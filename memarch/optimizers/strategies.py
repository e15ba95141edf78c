"""The `Strategy` contract every search strategy honours, and the three baselines: Optuna's
`RandomSampler` and `TPESampler`, and brute force over the valid space.

A strategy supplies an Optuna sampler (for trials nobody proposed) and, whenever the study's queue
is empty, may propose architectures; proposals are enqueued as Optuna trials, so random, tpe,
bruteforce and guided studies all have one format and one storage.
"""
from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import optuna

from memarch.errors import MemarchError
from memarch.pipeline.architecture import Architecture

if TYPE_CHECKING:
    from memarch.optimizers.history import History
    from memarch.optimizers.space import SearchSpace

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Proposal:
    """An architecture a strategy wants evaluated next, with why (kept in the trial's user attrs)."""

    architecture: Architecture
    role: str  # seed / exploit / explore / lm / bruteforce
    edit: str = ""  # e.g. "retrieve: hybrid -> mmr"
    parent: str = ""  # key of the architecture the edit was applied to
    reason: str = ""


class Strategy:
    """Base strategy: sample with an Optuna sampler, propose nothing.

    Example::

        strategy = make_strategy("tpe", seed=0)
        study = optuna.create_study(direction="maximize", sampler=strategy.sampler(space))
    """

    name = "base"

    def __init__(self, seed: int | None = 0):
        self.seed = seed

    def sampler(self, space: "SearchSpace") -> optuna.samplers.BaseSampler:
        return optuna.samplers.RandomSampler(seed=self.seed)

    def propose(self, history: "History", space: "SearchSpace", *, k: int) -> list[Proposal]:
        """Architectures to enqueue before the next trial; [] lets the sampler draw."""
        return []

    def artifacts(self) -> dict[str, Any]:
        """What the strategy decided last (diagnosis, gradient, ledger), for MLflow."""
        return {}


class RandomStrategy(Strategy):
    """Optuna's `RandomSampler` over the registry-derived distributions (invalid draws pruned)."""

    name = "random"


class TPEStrategy(Strategy):
    """Optuna's `TPESampler` with its defaults (10 random start-up trials); ``constant_liar`` keeps
    parallel workers from sampling the same point."""

    name = "tpe"

    def sampler(self, space: "SearchSpace") -> optuna.samplers.BaseSampler:
        return optuna.samplers.TPESampler(seed=self.seed, constant_liar=True)


class BruteForceStrategy(Strategy):
    """Every valid architecture once, in a seeded random order (for spaces small enough)."""

    name = "bruteforce"

    def propose(self, history: "History", space: "SearchSpace", *, k: int) -> list[Proposal]:
        tried = history.tried()
        todo = [a for a in space.space.enumerate() if a.key() not in tried]
        random.Random(f"{self.seed}:{len(tried)}").shuffle(todo)
        return [Proposal(a, role="bruteforce") for a in todo[:max(k, 1)]]


def _guided(seed: int | None, **kwargs: Any) -> Strategy:
    from memarch.optimizers.guided.strategy import GuidedStrategy

    return GuidedStrategy(seed=seed, **kwargs)


STRATEGIES = {
    "random": lambda seed, **kw: RandomStrategy(seed),
    "tpe": lambda seed, **kw: TPEStrategy(seed),
    "bruteforce": lambda seed, **kw: BruteForceStrategy(seed),
    "guided": _guided,
}


def make_strategy(name: str | Strategy, seed: int | None = 0, **kwargs: Any) -> Strategy:
    """A strategy by name (``guided`` takes ``lm=`` / ``meta_lm=`` / ``k=``)."""
    if isinstance(name, Strategy):
        return name
    try:
        return STRATEGIES[name](seed, **kwargs)
    except KeyError:
        raise MemarchError(f"unknown strategy {name!r}; expected one of {', '.join(STRATEGIES)}") from None

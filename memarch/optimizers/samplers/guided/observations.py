"""The observation graph: per-choice trial statistics (how architectures containing a store, a
retriever, a manager or an encoder scored), the support the proposer ranks edits by."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from memarch.optimizers.search.history import History
from memarch.pipeline.architecture import Architecture

FIELDS = ("encode", "store", "retrieve", "manage")
# Shrink a choice's mean towards the overall mean as if it had this many extra average trials,
# so one lucky trial does not dominate.
PRIOR_WEIGHT = 1.0


@dataclass
class ChoiceStats:
    n: int = 0
    total: float = 0.0
    best: float = float("-inf")

    @property
    def mean(self) -> float:
        return self.total / self.n if self.n else 0.0


class Observations:
    """Statistics per (field, choice) over the evaluated trials.

    Example::

        obs = Observations.from_history(history, space.encoders)
        obs.support("retrieve", "mmr"), obs.count("encode", "workflow")
    """

    def __init__(self, encoders: list[str] | tuple[str, ...] = ()) -> None:
        self.encoders = tuple(encoders)
        self.stats: dict[tuple[str, str], ChoiceStats] = defaultdict(ChoiceStats)
        self.absent: dict[str, ChoiceStats] = defaultdict(ChoiceStats)  # encoder not chosen
        self.n = 0
        self.total = 0.0

    @classmethod
    def from_history(cls, history: History, encoders: list[str] | tuple[str, ...] = ()) -> "Observations":
        obs = cls(encoders)
        for r in history.records:
            obs.add(r.architecture, r.score)
        return obs

    def add(self, arch: Architecture, score: float) -> None:
        self.n += 1
        self.total += score
        keys = [("encode", e) for e in arch.encode] + [(f, getattr(arch, f)) for f in FIELDS[1:]]
        for key in keys:
            s = self.stats[key]
            s.n += 1
            s.total += score
            s.best = max(s.best, score)
        for name in set(self.encoders) - set(arch.encode):
            s = self.absent[name]
            s.n += 1
            s.total += score

    @property
    def mean(self) -> float:
        return self.total / self.n if self.n else 0.0

    def count(self, field: str, choice: str) -> int:
        return self.stats[(field, choice)].n if (field, choice) in self.stats else 0

    def support(self, field: str, choice: str) -> float:
        """Shrunken mean score of trials with this choice; untried choices get the overall mean
        plus a small optimism bonus so that they are tried before known-mediocre ones."""
        s = self.stats.get((field, choice))
        if s is None or s.n == 0:
            return self.mean + 1e-3
        return (s.total + PRIOR_WEIGHT * self.mean) / (s.n + PRIOR_WEIGHT)

    def encoder_effect(self, name: str) -> float:
        """Mean with the encoder minus mean without it (0 when either side is unobserved)."""
        w, wo = self.stats.get(("encode", name)), self.absent.get(name)
        if not w or not wo or not w.n or not wo.n:
            return 0.0
        return w.mean - wo.mean

    def to_dict(self) -> dict:
        return {f"{f}={c}": {"n": s.n, "mean": round(s.mean, 4), "best": round(s.best, 4)}
                for (f, c), s in sorted(self.stats.items())}

"""`CompareSettings`: how `compare` lays out its runs — how many seeds from which, the target, the
baselines, the studies' names, the runs side by side — beside the `SearchSettings` every run shares."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from memarch.errors import MemarchError
from memarch.pipeline.settings import Settings


@dataclass(frozen=True)
class CompareSettings(Settings):
    """The settings of one comparison (the search's own are a `SearchSettings`).

    Example::

        compare(evaluator, "conversation", ["guided", "random"], SearchSettings(budget=20),
                CompareSettings(seeds=5, first_seed=10, workers=2))

    Args:
        seeds: runs per strategy, with seeds ``first_seed`` .. ``first_seed + seeds - 1``.
        first_seed: the first seed (spread seeds over processes or machines).
        target: the search score a run should reach (None: 99% of the best any run found).
        baselines: also score the presets and the no-memory agent on the test split.
        study_prefix: the studies are ``<prefix>-<family>-<strategy>-s<seed>``.
        workers: (strategy, seed) runs side by side in forked processes (LM-free only).
    """

    seeds: int = 3
    first_seed: int = 0
    target: float | None = None
    baselines: bool = True
    study_prefix: str = "compare"
    workers: int = 1

    what: ClassVar[str] = "compare setting"

    def __post_init__(self) -> None:
        if self.seeds < 1:  # no run: nothing to compare
            raise MemarchError(f"seeds must be at least 1, got {self.seeds}")

    @property
    def seed_range(self) -> range:
        return range(self.first_seed, self.first_seed + self.seeds)

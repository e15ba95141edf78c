"""The `Manager` contract: how memory evolves. Hooks run on insert, after each episode, on
retrieval feedback, and periodically; every change is written into the items' lineage and
nothing is silently dropped (deletions are tombstones with a reason)."""
from __future__ import annotations

from typing import Any, ClassVar

import dspy

from memarch.modules.stores.base import Store
from memarch.pipeline.episodes import Episode
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.resources import Resources
from memarch.pipeline.retrieval import Retrieval


class Manager(dspy.Module):
    name: ClassVar[str] = "base"
    period: int = 10  # episodes between periodic passes

    def __init__(self, resources: Resources | None = None, **config: Any):
        super().__init__()
        self.resources = resources or Resources()
        self.config = dict(config)
        self.period = int(config.get("period", type(self).period))

    @property
    def actor(self) -> str:
        return f"manager:{self.name}"

    def on_insert(self, items: list[MemoryItem], store: Store) -> list[MemoryItem]:
        """Return the items to add; may update or tombstone existing ones (dedup, conflicts)."""
        return items

    def after_episode(self, episode: Episode, store: Store) -> None:
        """Post-episode maintenance (decay, access stats)."""

    def feedback(self, retrieval: Retrieval, success: bool | None, store: Store) -> None:
        """Boost items that helped a success, penalise those retrieved for a failure."""

    def periodic(self, store: Store, namespace: str) -> None:
        """Every ``period`` episodes: curation, utility audit, size-capped prune."""

    def forward(self, items: list[MemoryItem], store: Store) -> list[MemoryItem]:
        return self.on_insert(items, store)

"""The `Manager` contract: how memory evolves. Hooks run on insert, after each episode, on
retrieval feedback, periodically, and after every write to keep the ``memory_budget``; every
change is written into the items' lineage and nothing is silently dropped (deletions are
tombstones with a reason)."""
from __future__ import annotations

from typing import Any, ClassVar

import dspy

from memarch.pipeline.module_attributes import lean_getattribute
from memarch.modules.managers._budget import active_words, new_stats, parse_budget, prune_lowest, refuse_oversized
from memarch.modules.stores.base import Store
from memarch.pipeline.episodes import Episode
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.resources import Resources
from memarch.pipeline.retrieval import Retrieval


class Manager(dspy.Module):
    name: ClassVar[str] = "base"
    # dspy's check of direct `forward` calls for `forward` only (pipeline/module_attributes.py)
    __getattribute__ = lean_getattribute
    period: int = 10  # episodes between periodic passes

    def __init__(self, resources: Resources | None = None, **config: Any):
        super().__init__()
        self.resources = resources or Resources()
        self.config = dict(config)
        self.period = int(config.get("period", type(self).period))
        # Words (`count_words`) of active items a namespace may keep after any write; None: no limit.
        self.memory_budget = parse_budget(config.get("memory_budget"))
        self.budget_stats = new_stats()

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

    def enforce_budget(self, store: Store, namespace: str) -> None:
        """Hard limit, run after every write: afterwards the namespace's active words are at most
        ``memory_budget``. An item larger than the whole budget is refused (a tombstone, never
        truncated); then the manager's own policy (`fit_budget`) makes room; whatever it leaves
        over is pruned lowest utility first, so the limit holds whatever the policy did."""
        budget = self.memory_budget
        if budget is None:
            return
        self.budget_stats["passes"] += 1
        refuse_oversized(self, store, namespace, budget)
        if active_words(store, namespace) <= budget:
            return
        self.fit_budget(store, namespace, budget)
        if active_words(store, namespace) > budget:
            order = {it.id: i for i, it in enumerate(store.list(namespace))}
            prune_lowest(self, store, namespace, budget, lambda it: it.usage.strength, lambda it: order[it.id],
                         "pruned after the policy")

    def fit_budget(self, store: Store, namespace: str, budget: int) -> None:
        """The manager's budget policy (subclasses); the contract's default prunes in `enforce_budget`."""

    def tombstone(self, item: MemoryItem, store: Store, reason: str, related: list[str] | None = None) -> None:
        store.delete(item.id, item.namespace, reason=reason, actor=self.actor, status="deleted", related=related)

    def forward(self, items: list[MemoryItem], store: Store) -> list[MemoryItem]:
        return self.on_insert(items, store)

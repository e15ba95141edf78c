"""The `Retriever` contract: rank the store's eligible items for a query, then pack them into
a context that honours ``top_k`` and the context budget (the ``pack`` knobs choose how: _packing.py).
Between the two, the time-, recency- and entity-aware sides the config turns on are fused in
(_aware.py). Eligible = active, same namespace, and not written by the episode being answered (no
self-retrieval)."""
from __future__ import annotations

from typing import Any, ClassVar

import dspy

from memarch.pipeline.module_attributes import lean_getattribute
from memarch.modules.stores.base import Store
from memarch.pipeline.episodes import Query
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.resources import Resources
from memarch.modules.retrievers._aware import fuse_aware
from memarch.modules.retrievers._eligibility import eligible, excluded_fn
from memarch.modules.retrievers._packing import pack_context, pool_size
from memarch.pipeline.retrieval import DEFAULT_TOP_K, Retrieval, ScoredItem


class Retriever(dspy.Module):
    """Subclasses implement :meth:`rank`; :meth:`retrieve` applies the common contract."""

    # dspy's check of direct `forward` calls for `forward` only (pipeline/module_attributes.py)
    __getattribute__ = lean_getattribute

    name: ClassVar[str] = "base"
    # True where `rank` itself returns only eligible items (its searches filter by eligibility), so
    # `retrieve` need not check each item again
    ranks_eligible_only: ClassVar[bool] = False

    def __init__(self, resources: Resources | None = None, **config: Any):
        super().__init__()
        self.resources = resources or Resources()
        self.config = dict(config)

    def candidates(self, query: Query, store: Store) -> list[MemoryItem]:
        return [it for it in store.list(query.namespace) if eligible(it, query)]

    def exclude_fn(self, query: Query):
        """Predicate for ``Store.search(exclude=...)``: True for items that must not be returned."""
        return excluded_fn(query)

    def rank(self, query: Query, store: Store, k: int) -> list[ScoredItem]:
        raise NotImplementedError

    def retrieve(self, query: Query | str, store: Store, *, top_k: int = DEFAULT_TOP_K,
                 context_budget: int | None = None) -> Retrieval:
        if isinstance(query, str):
            query = Query(text=query)
        ranked = self.rank(query, store, pool_size(self.config, top_k))
        if not self.ranks_eligible_only:
            ranked = [s for s in ranked if eligible(s.item, query)]
        trace: dict[str, Any] = {"retriever": self.name}
        resources = self.resources  # once: an attribute of a module is a Python-level lookup (lean_getattribute)
        ranked = fuse_aware(query, ranked, store, config=self.config, embedder=resources.embedder, trace=trace)
        return pack_context(query, ranked, top_k=top_k, context_budget=context_budget, config=self.config,
                            embedder=resources.embedder, trace=trace, store=store, texts=resources.texts)

    def forward(self, query: Query | str, store: Store, top_k: int = DEFAULT_TOP_K,
                context_budget: int | None = None) -> Retrieval:
        return self.retrieve(query, store, top_k=top_k, context_budget=context_budget)

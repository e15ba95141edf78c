"""What a query may read: active items of its namespace, never those written by the episode being
answered (no self-retrieval). Shared by the retrievers, the packers and the query-aware sides."""
from __future__ import annotations

from typing import Callable

from memarch.modules.stores.activity import ActiveIn, NotActiveIn
from memarch.pipeline.episodes import Query
from memarch.pipeline.items import MemoryItem


def eligible(item: MemoryItem, query: Query) -> bool:
    return item.active and item.namespace == query.namespace and (
        query.episode_id is None or item.episode_id != query.episode_id)


def eligible_fn(query: Query) -> Callable[[MemoryItem], bool]:
    """``eligible(item, query)`` as a one-argument predicate with the query's fields bound: the
    form a store's filter calls once per candidate (tens of thousands of calls in a trial)."""
    ns, episode = query.namespace, query.episode_id
    if episode is None:  # a store's indexes of ``ns`` hold nothing it rejects (stores/activity.py)
        return ActiveIn(ns)
    return lambda it: it.status == "active" and it.namespace == ns and it.episode_id != episode


def excluded_fn(query: Query) -> Callable[[MemoryItem], bool]:
    """``not eligible(item, query)``, bound like `eligible_fn` (one call per candidate, not two)."""
    ns, episode = query.namespace, query.episode_id
    if episode is None:
        return NotActiveIn(ns)
    return lambda it: it.status != "active" or it.namespace != ns or it.episode_id == episode

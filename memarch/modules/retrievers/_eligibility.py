"""What a query may read: active items of its namespace, never those written by the episode being
answered (no self-retrieval). Shared by the retrievers, the packers and the query-aware sides."""
from __future__ import annotations

from memarch.pipeline.episodes import Query
from memarch.pipeline.items import MemoryItem


def eligible(item: MemoryItem, query: Query) -> bool:
    return item.active and item.namespace == query.namespace and (
        query.episode_id is None or item.episode_id != query.episode_id)

"""Case matching shared by `contrastive` and `cbr_rerank`: the query is compared with the task each
item was learned from (its case) and with the item's own text, over a per-namespace cached matrix."""
from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import numpy as np

from memarch.modules.retrievers._lexical import case_text

if TYPE_CHECKING:
    from memarch.modules.stores.base import Store
    from memarch.pipeline.embed import Embedder
    from memarch.pipeline.episodes import Query
    from memarch.pipeline.items import MemoryItem


class CaseIndex:
    """Case and content embeddings of the active items of one namespace.

    Example::

        index = case_index(store, "default", embedder)
        case, content = index.similarities(embedder.embed_one("open the fridge"))
        cbr = np.maximum(case, 0.7 * content)
    """

    def __init__(self, items: list["MemoryItem"], store: "Store", embedder: "Embedder"):
        self.items = items
        dim = embedder.dim
        self.content = store.vectors(items) if items else np.zeros((0, dim), np.float32)
        self.case = embedder.embed([case_text(it) for it in items]) if items else self.content
        self.episode_ids = np.array([it.episode_id or "" for it in items], dtype=object)
        self.outcomes = np.array([it.outcome for it in items], dtype=object)

    def similarities(self, vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cosine similarity of ``vector`` with every item's case and content."""
        v = np.asarray(vector, dtype=np.float32)
        return self.case @ v, self.content @ v

    def eligible_mask(self, query: "Query") -> np.ndarray:
        """Items this query may read (the index holds only active items of its namespace)."""
        if query.episode_id is None:
            return np.ones(len(self.items), dtype=bool)
        return self.episode_ids != query.episode_id


_INDEXES: "weakref.WeakKeyDictionary[Store, dict]" = weakref.WeakKeyDictionary()


def case_index(store: "Store", namespace: str, embedder: "Embedder") -> CaseIndex:
    """The cached `CaseIndex` of ``store``/``namespace``, rebuilt when the namespace version moves."""
    per_store = _INDEXES.setdefault(store, {})
    version = store.version(namespace)
    hit = per_store.get(namespace)
    if hit is not None and hit[0] == version and hit[1] == embedder.model_id:
        return hit[2]
    index = CaseIndex(store.list(namespace), store, embedder)
    per_store[namespace] = (version, embedder.model_id, index)
    return index


def cbr_similarity(case: np.ndarray, content: np.ndarray, content_weight: float) -> np.ndarray:
    """AutoMem's case score: ``max(case, content_weight x content)`` (a case match counts fully)."""
    return np.maximum(case, content_weight * content)

"""`Store.search_many` (a manager's near-duplicate check of a written batch) answers each row as
`Store.search` does alone — same items, same float scores, same order — for every store, with
inactive items to skip, rows that need a longer fetch than the first, and batches longer than one
FAISS call."""
from __future__ import annotations

import numpy as np
import pytest

from memarch.pipeline.items import MemoryItem

from store_helpers import store_factory, unit_rows


@pytest.fixture
def make(hash_resources, tmp_path):
    return store_factory(hash_resources, tmp_path)


def _inactive(item: MemoryItem) -> bool:
    return not item.active


@pytest.mark.parametrize("name", ["json", "vector", "hybrid", "graph"])
@pytest.mark.parametrize("k", [1, 8, 40])
def test_each_row_equals_a_search_alone(make, name, k):
    store = make(name)
    n = 300
    items = [MemoryItem(text=f"note {j} about topic {j % 17}", kind="turn", namespace="a") for j in range(n)]
    vecs = unit_rows(n, seed=5)
    store.add(items, vectors=vecs)
    rng = np.random.default_rng(0)
    # Most of a cluster made inactive: its rows must fetch past the first 40 hits.
    for it in items[:n // 2]:
        if rng.random() < 0.9:
            store.delete(it.id, "a", reason="test", actor="manager:test")
    queries = np.concatenate([vecs[:40], unit_rows(300, seed=9)])  # > one FAISS call's rows
    alone = [store.search(q, k, "a", exclude=_inactive) for q in queries]
    many = store.search_many(queries, k, "a", exclude=_inactive)
    assert [[(it.id, s) for it, s in row] for row in many] == [[(it.id, s) for it, s in row] for row in alone]
    assert all(len(row) == k for row in alone)
    assert store.search_many(queries[:0], k, "a", exclude=_inactive) == []
    assert store.search_many(queries[:3], k, "empty", exclude=_inactive) == [[], [], []]


def test_min_score_keeps_the_hits_of_the_k_best_at_or_above_it():
    """``min_score``: the same hits as the k best filtered by score, the walk stopped early."""
    import numpy as np

    from memarch.modules.stores.json_store import JsonStore
    from memarch.modules.stores.vector import VectorStore
    from memarch.pipeline.embed import Embedder
    from memarch.pipeline.items import MemoryItem
    from memarch.pipeline.resources import Resources

    res = Resources(embedder=Embedder("hash"), use_encoder_cache=False)
    texts = [f"note {i} about {w}" for i, w in enumerate(["apples", "pears", "apples and pears", "plums", "apples"] * 6)]
    for cls in (VectorStore, JsonStore):
        store = cls(res)
        store.add([MemoryItem(t, "fact", episode_id=f"e{i}") for i, t in enumerate(texts)])
        queries = res.embedder.embed(["note about apples", "note 3 about plums", "pears"])
        for k in (1, 4, 8, 40):
            for floor in (-1.0, 0.2, 0.5, 0.9, 2.0):
                full = store.search_many(queries, k, exclude=lambda it: not it.active)
                cut = store.search_many(queries, k, exclude=lambda it: not it.active, min_score=floor)
                assert cut == [[h for h in row if h[1] >= floor] for row in full], (cls, k, floor)
        assert np.isfinite([s for row in full for _, s in row]).all()

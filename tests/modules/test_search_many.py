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

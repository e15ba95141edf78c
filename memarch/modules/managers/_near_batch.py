"""A written batch's near-duplicate candidates, as the floor manager's admission check asks for them:
each item's nearest active items in the store, searched for the whole batch at once, and which items
no earlier item of the batch can come near (their comparison with the batch is skipped)."""
from __future__ import annotations

import numpy as np

from memarch.modules.stores.activity import INACTIVE
from memarch.modules.stores.base import Store
from memarch.pipeline.items import MemoryItem

NEAR_K = 8  # stored items a written item is compared with (its nearest active ones)


def earlier_may_reach(vecs: np.ndarray, threshold: float) -> list[bool]:
    """Per row, whether some earlier row's cosine with it may reach ``threshold``: the best of one
    product of the batch with itself, plus the rounding by which any float32 dot product of d terms
    may differ from it (``4 d u |x| |y|``, u the unit roundoff). False means no earlier row reaches it
    however its product is computed (as `FloorManager._near` computes it)."""
    n = len(vecs)
    if n < 2:
        return [False] * n
    x = np.asarray(vecs, dtype=np.float32)
    norms = np.linalg.norm(x.astype(np.float64), axis=1)
    slack = 4.0 * x.shape[1] * float(np.finfo(np.float32).eps) * np.outer(norms, norms) + 1e-6
    bound = (x @ x.T).astype(np.float64) + slack
    bound[np.tril_indices(n)] = -np.inf  # bound[i, j]: row i earlier than row j
    return (bound.max(axis=0) >= threshold).tolist()


class BatchSearch:
    """The store's `NEAR_K` nearest active items for each row of a written batch, searched in one
    `Store.search_many` on first use; a row is served only while the namespace's version is the
    one searched at (None after a write: the caller searches again)."""

    def __init__(self, store: Store, ns: str, vecs: np.ndarray, k: int, min_score: float | None = None):
        self.store, self.ns, self.vecs, self.k, self.min_score = store, ns, vecs, k, min_score
        self.rows: list | None = None
        self.version = -1

    def row(self, j: int) -> list[tuple[MemoryItem, float]] | None:
        if self.rows is None:
            if len(self.vecs) < 2:
                return None
            self.version = self.store.version(self.ns)
            self.rows = self.store.search_many(self.vecs, self.k, self.ns, exclude=INACTIVE,
                                               min_score=self.min_score)
        return self.rows[j] if self.store.version(self.ns) == self.version else None

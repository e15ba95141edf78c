"""`nth_largest`: the cut of a top-n (every value at least it is in), selected from the top of the
array. ``np.partition(x, len(x) - n)`` gives the same value but numpy's introselect, asked for a
rank near the end of an array with few distinct values, degenerates: the BM25 scores of a query whose
words most documents share (12,522 scores, 11 distinct) took 1.28 ms that way and 85 µs this way."""
from __future__ import annotations

import numpy as np


def nth_largest(values: np.ndarray, n: int) -> float:
    """The ``n``-th largest of ``values`` (1 <= n <= len(values)), ties counted: ``sorted(values)[-n]``."""
    return -np.partition(-np.asarray(values), n - 1)[n - 1]

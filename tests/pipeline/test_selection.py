"""`nth_largest` is the n-th largest value, ties counted, on arrays with few distinct values (where
numpy's partition near the end is slow) as on random ones."""
from __future__ import annotations

import numpy as np

from memarch.pipeline.selection import nth_largest


def test_nth_largest_equals_the_sorted_value():
    rng = np.random.default_rng(0)
    for _ in range(500):
        x = np.round(rng.random(int(rng.integers(1, 400))) * int(rng.integers(1, 20))) / 3
        n = int(rng.integers(1, len(x) + 1))
        assert nth_largest(x, n) == sorted(x)[-n] == np.partition(x, len(x) - n)[len(x) - n]
    assert nth_largest(np.array([2.0, 2.0, 1.0]), 2) == 2.0 and nth_largest(np.array([5.0]), 1) == 5.0

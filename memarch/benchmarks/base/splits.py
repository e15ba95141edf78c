"""The split rules: a deterministic search / validation / test assignment by seed, of whole units
(dialogues) in balanced shares or of single keys (questions, tasks) by hash."""
from __future__ import annotations

import hashlib
import math

SPLITS = ("search", "validation", "test")
SPLIT_BY = ("auto", "question", "dialogue", "instance")
# With fewer dialogues a dialogue split leaves a split with one or none.
MIN_DIALOGUES_TO_SPLIT = 6
# Shares of the questions (or units) per split; search is where the optimiser looks.
DEFAULT_FRACTIONS = {"search": 0.5, "validation": 0.25, "test": 0.25}


def _hash01(seed: int, key: str) -> float:
    return int.from_bytes(hashlib.sha256(f"{seed}\x1f{key}".encode()).digest()[:8], "big") / 2**64


def balanced_units(seed: int, keys: list[str], fractions: dict[str, float]) -> dict[str, str]:
    """Whole units (dialogues) to splits in the given shares: units ordered by a hash of (seed, key);
    ``round(n x search share)`` to search, ``floor(n x validation share)`` to validation, the rest
    (the report split gets the odd unit) to test; every split gets a unit when there are three or
    more.

    Example::

        balanced_units(0, [f"conv-{i}" for i in range(10)], DEFAULT_FRACTIONS)   # 5 / 2 / 3 units
    """
    order = sorted(dict.fromkeys(keys), key=lambda k: (_hash01(seed, k), k))
    n = len(order)
    n_search = int(round(n * fractions["search"]))
    n_val = int(math.floor(n * fractions["validation"] + 1e-9))
    if n >= 3:
        n_search, n_val = max(1, min(n_search, n - 2)), max(1, n_val)
        n_val = min(n_val, n - n_search - 1)
    return {k: ("search" if i < n_search else "validation" if i < n_search + n_val else "test")
            for i, k in enumerate(order)}


def bucket(seed: int, key: str, fractions: dict[str, float]) -> str:
    """Deterministic, order-independent split assignment: a hash of (seed, key) placed on [0, 1)."""
    h = _hash01(seed, key)
    acc = 0.0
    for name in SPLITS:
        acc += fractions[name]
        if h < acc:
            return name
    return SPLITS[-1]

"""Percentile bootstrap confidence intervals over seeds: a statistic with its 95% CI, and the ratio
of two medians (replays, compare's fronts and compare against a landscape report them)."""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

BOOTSTRAP = 2000


def bootstrap_ci(values: Any, stat: Callable[[np.ndarray], float] = np.median, *, n: int = BOOTSTRAP,
                 seed: int = 0, level: float = 0.95) -> tuple[float, float, float]:
    """(statistic, low, high): percentile bootstrap over the values (NaNs dropped).

    Example::

        bootstrap_ci([3, 5, 8, 13])          # (6.5, 3.0, 13.0)
    """
    x = np.asarray([v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))], float)
    if not len(x):
        return (float("nan"),) * 3
    rng = np.random.default_rng(seed)
    boots = np.array([stat(x[rng.integers(0, len(x), len(x))]) for _ in range(n)])
    a = (1 - level) / 2
    return float(stat(x)), float(np.quantile(boots, a)), float(np.quantile(boots, 1 - a))


def ratio_ci(a: Any, b: Any, *, n: int = BOOTSTRAP, seed: int = 0) -> tuple[float, float, float]:
    """median(a) / median(b) with a bootstrap CI (seeds resampled independently on each side)."""
    x, y = np.asarray(list(a), float), np.asarray(list(b), float)
    rng = np.random.default_rng(seed)
    boots = [np.median(x[rng.integers(0, len(x), len(x))]) / np.median(y[rng.integers(0, len(y), len(y))])
             for _ in range(n)]
    return float(np.median(x) / np.median(y)), float(np.quantile(boots, 0.025)), float(np.quantile(boots, 0.975))

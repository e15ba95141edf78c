"""Score normalisations the fusing retrievers share: z-scores (weighted z-score fusion) and reciprocal
ranks (RRF) of one side's raw scores."""
from __future__ import annotations

import numpy as np

RRF_K = 60  # Cormack et al. 2009


def zscores(scores: np.ndarray) -> np.ndarray:
    """``(x - mean) / sd`` over the side's scores; zeros when they are all equal (or there are none)."""
    scores = np.asarray(scores, dtype=np.float64)
    sd = float(scores.std()) if len(scores) else 0.0
    return (scores - scores.mean()) / sd if sd > 0 else np.zeros(len(scores))


def reciprocal_ranks(scores: np.ndarray, k: int = RRF_K) -> np.ndarray:
    """``1 / (k + rank)`` of each score (rank 1 the highest; ties keep the given order)."""
    scores = np.asarray(scores, dtype=np.float64)
    ranks = np.empty(len(scores))
    ranks[np.argsort(-scores, kind="stable")] = np.arange(1, len(scores) + 1)
    return 1.0 / (k + ranks)

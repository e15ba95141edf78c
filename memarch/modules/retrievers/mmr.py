"""`mmr` retriever: dense recall, then maximal marginal relevance to trade relevance for diversity."""
from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from memarch.modules.retrievers._config import settings
from memarch.modules.retrievers.base import Retriever
from memarch.modules.stores.base import Store
from memarch.pipeline.episodes import Query
from memarch.modules.retrievers._aware import AWARENESS
from memarch.modules.retrievers._packing import PACKING
from memarch.pipeline.knobs import TOP_K, Knob
from memarch.pipeline.registry import register
from memarch.pipeline.resources import Resources
from memarch.pipeline.retrieval import ScoredItem


def mmr_select(relevance: np.ndarray, similarity: np.ndarray, k: int, lam: float
               ) -> list[tuple[int, float, float]]:
    """Greedy MMR: pick ``argmax lam * rel(d) - (1 - lam) * max_{s picked} sim(d, s)``.

    Returns ``(index, mmr value, redundancy)`` in pick order.
    """
    n = len(relevance)
    picked: list[tuple[int, float, float]] = []
    redundancy = np.zeros(n, dtype=np.float64)  # max similarity to anything picked so far
    free = np.ones(n, dtype=bool)
    for _ in range(min(k, n)):
        value = lam * relevance - (1.0 - lam) * redundancy
        value[~free] = -np.inf
        j = int(np.argmax(value))
        picked.append((j, float(value[j]), float(redundancy[j])))
        free[j] = False
        redundancy = np.maximum(redundancy, similarity[j])
    return picked


@register("retriever", "mmr", rank=6, needs_embeddings=True,
          description="dense recall of max(2k, 20), then MMR (lambda 0.5)",
          knobs=(TOP_K, Knob("min_recall", "int", 5, 100, log=True, default=20, description="smallest recall set"),
                 Knob("mmr_lambda", "float", 0.0, 1.0, default=0.5, description="1 pure relevance, 0 pure diversity"), *PACKING, *AWARENESS))
class MMRRetriever(Retriever):
    """Maximal marginal relevance over a dense recall set: relevant items that do not repeat
    each other.

    Items come in pick order; ``score`` is the MMR value when picked, the trace keeps its parts.

    Example::

        retriever = MMRRetriever(resources, mmr_lambda=0.5)
        [s.trace["relevance"] for s in retriever.retrieve("cooking steps", store).items]

    Args:
        recall_factor, min_recall: the recall set is ``max(recall_factor * k, min_recall)``
            nearest items (AutoMem: ``max(2k, 20)``).
        mmr_lambda: 1.0 is pure relevance, 0.0 pure diversity (AutoMem: 0.5).
    """

    DEFAULTS: ClassVar[dict[str, Any]] = {"recall_factor": 2, "min_recall": 20, "mmr_lambda": 0.5}

    def __init__(self, resources: Resources | None = None, **config: Any):
        super().__init__(resources, **config)
        self.settings = settings("mmr", self.DEFAULTS, config)

    def rank(self, query: Query, store: Store, k: int) -> list[ScoredItem]:
        cfg = self.settings
        recall = max(cfg["recall_factor"] * k, cfg["min_recall"])
        vector = self.resources.embedder.embed_one(query.text)
        hits = store.search(vector, recall, query.namespace, exclude=self.exclude_fn(query))
        if not hits:
            return []
        items = [it for it, _ in hits]
        relevance = np.array([s for _, s in hits], dtype=np.float64)
        vecs = store.vectors(items)
        similarity = (vecs @ vecs.T).astype(np.float64)
        out = []
        for j, value, redundancy in mmr_select(relevance, similarity, k, float(cfg["mmr_lambda"])):
            out.append(ScoredItem(items[j], value, {
                "mmr": round(value, 6), "relevance": round(float(relevance[j]), 6),
                "redundancy": round(redundancy, 6), "recall_rank": j + 1, "recall": recall,
                "mmr_lambda": cfg["mmr_lambda"]}))
        return out

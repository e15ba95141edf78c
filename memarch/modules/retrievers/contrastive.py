"""`contrastive` retriever: what worked and what failed on similar tasks, from separate success
and failure pools (ExpeL-style), weighted toward success."""
from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from memarch.modules.retrievers._cases import case_index, cbr_similarity
from memarch.modules.retrievers._config import settings
from memarch.modules.retrievers.base import Retriever
from memarch.modules.stores.base import Store
from memarch.pipeline.episodes import Query
from memarch.pipeline.registry import register
from memarch.pipeline.resources import Resources
from memarch.pipeline.retrieval import ScoredItem


@register("retriever", "contrastive", rank=2, needs_embeddings=True,
          description="success pool (k=3, w=0.6) + failure pool (k=2, w=0.4)")
class ContrastiveRetriever(Retriever):
    """The ``success_k`` best items from successful episodes and the ``failure_k`` best from failed
    ones, each scored ``pool weight x case similarity`` and merged by that score.

    Case similarity is ``max(case, content_weight x content)``: cosine of the query with the task
    the item was learned from (``fields["task"]``, else its text) or, discounted, with its text.

    Conversation memory has no outcomes (every item ``"unknown"``): when neither pool has an
    eligible item, the retriever falls back to one ``unlabelled`` pool of ``success_k + failure_k``
    items with weight 1.0, and says so in each trace (``"fallback": "no outcome labels"``).
    Otherwise items without an outcome are not read.

    Example::

        retriever = ContrastiveRetriever(resources)
        [(s.trace["pool"], s.score) for s in retriever.retrieve(task, store, top_k=5).items]
        # [("success", 0.52), ("success", 0.47), ("failure", 0.33), ...]

    Args:
        success_k, success_weight: success pool size and weight (AutoMem: 3, 0.6).
        failure_k, failure_weight: failure pool size and weight (AutoMem: 2, 0.4).
        content_weight: discount on the item-text similarity in the case score (0.7).
    """

    DEFAULTS: ClassVar[dict[str, Any]] = {"success_k": 3, "success_weight": 0.6, "failure_k": 2,
                                          "failure_weight": 0.4, "content_weight": 0.7}

    def __init__(self, resources: Resources | None = None, **config: Any):
        super().__init__(resources, **config)
        self.settings = settings("contrastive", self.DEFAULTS, config)

    def rank(self, query: Query, store: Store, k: int) -> list[ScoredItem]:
        cfg = self.settings
        index = case_index(store, query.namespace, self.resources.embedder)
        if not index.items:
            return []
        case, content = index.similarities(self.resources.embedder.embed_one(query.text))
        similarity = cbr_similarity(case, content, cfg["content_weight"])
        mask = index.eligible_mask(query)

        pools = [("success", cfg["success_k"], cfg["success_weight"]),
                 ("failure", cfg["failure_k"], cfg["failure_weight"])]
        fallback = not np.any(mask & np.isin(index.outcomes, ["success", "failure"]))
        if fallback:
            pools = [("unknown", cfg["success_k"] + cfg["failure_k"], 1.0)]

        out: list[ScoredItem] = []
        for outcome, size, weight in pools:
            members = np.flatnonzero(mask & (index.outcomes == outcome))
            best = members[np.argsort(-similarity[members], kind="stable")[:size]]
            for pool_rank, i in enumerate(best, start=1):
                trace = {"pool": "unlabelled" if fallback else outcome, "pool_rank": pool_rank,
                         "pool_weight": weight, "similarity": round(float(similarity[i]), 6),
                         "case": round(float(case[i]), 6), "content": round(float(content[i]), 6)}
                if fallback:
                    trace["fallback"] = "no outcome labels"
                out.append(ScoredItem(index.items[i], weight * float(similarity[i]), trace))
        out.sort(key=lambda s: (-s.score, s.item.id))
        return out[:k]

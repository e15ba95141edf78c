"""`contrastive` retriever: what worked and what failed on similar tasks, from separate success
and failure pools (ExpeL-style), weighted toward success."""
from __future__ import annotations

from typing import Any, ClassVar

from memarch.modules.retrievers._cases import best_cases
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


@register("retriever", "contrastive", rank=2, needs_embeddings=True,
          description="success pool (k=3, w=0.6) + failure pool (k=2, w=0.4)",
          knobs=(TOP_K, Knob("success_k", "int", 1, 10, default=3, description="success pool size"),
                 Knob("failure_k", "int", 0, 10, default=2, description="failure pool size"),
                 Knob("content_weight", "float", 0.0, 1.0, default=0.7,
                      description="discount on item-text similarity in the case score"), *PACKING, *AWARENESS))
class ContrastiveRetriever(Retriever):
    """The ``success_k`` best items from successful episodes and the ``failure_k`` best from failed
    ones, each scored ``pool weight x case similarity`` (``trace["cbr"]``) and merged by that score.

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
        embedder = self.resources.embedder
        vector = embedder.embed_one(query.text)

        def pool(outcome: str, size: int):
            return best_cases(store, vector, query.namespace, int(size), content_weight=cfg["content_weight"],
                              embedder=embedder, exclude=self.exclude_fn(query), where={"outcome": outcome})

        pools = [("success", pool("success", cfg["success_k"]), cfg["success_weight"]),
                 ("failure", pool("failure", cfg["failure_k"]), cfg["failure_weight"])]
        fallback = not (pools[0][1] or pools[1][1])
        if fallback:
            pools = [("unlabelled", pool("unknown", cfg["success_k"] + cfg["failure_k"]), 1.0)]

        out: list[ScoredItem] = []
        for name, matches, weight in pools:
            for pool_rank, m in enumerate(matches, start=1):
                trace = {"pool": name, "pool_rank": pool_rank, "pool_weight": weight, **m.trace()}
                if fallback:
                    trace["fallback"] = "no outcome labels"
                out.append(ScoredItem(m.item, weight * m.score, trace))
        out.sort(key=lambda s: (-s.score, s.item.id))
        return out[:k]

"""`hyde` retriever: the LM writes a hypothetical answer passage; search with the average of its
embedding and the query's (Hypothetical Document Embeddings, Gao et al. 2022)."""
from __future__ import annotations

from typing import Any, ClassVar

import dspy
import numpy as np

from memarch.errors import LMRequiredError
from memarch.modules.retrievers._config import settings
from memarch.modules.retrievers._lm import ask
from memarch.modules.retrievers.base import Retriever
from memarch.modules.signatures.retrievers import HypotheticalPassage
from memarch.modules.stores.base import Store
from memarch.pipeline.episodes import Query
from memarch.modules.retrievers._aware import AWARENESS
from memarch.modules.retrievers._packing import PACKING
from memarch.pipeline.knobs import TOP_K, Knob
from memarch.pipeline.registry import register
from memarch.pipeline.resources import Resources
from memarch.pipeline.retrieval import ScoredItem


def check_passage(prediction: dspy.Prediction) -> str:
    passage = (prediction.passage or "").strip()
    if not passage:
        raise ValueError("the passage is empty")
    return passage


@register("retriever", "hyde", rank=5, needs_lm=True, needs_embeddings=True,
          description="LM writes a hypothetical passage; search with its embedding averaged with the query's",
          knobs=(TOP_K, Knob("passage_weight", "float", 0.0, 1.0, default=0.5,
                             description="share of the passage embedding in the search vector"), *PACKING, *AWARENESS))
class HydeRetriever(Retriever):
    """Dense search with ``(1 - passage_weight) x query + passage_weight x passage`` (renormalised),
    where the passage is the LM's guess at the memory that would answer the query.

    Needs an LM (raises `LMRequiredError` without one). If the LM's answer is unusable after one
    corrective retry, it searches with the query embedding alone and traces ``"passage": None``.

    Example::

        retriever = HydeRetriever(Resources(lm=dspy.LM("openai/gpt-4o-mini")))
        retriever.retrieve(Query("when did Melanie paint a sunrise?"), store).items[0].trace
        # {"dense_score": 0.58, "passage": "Melanie painted a sunrise over the lake in 2022..."}

    Args:
        passage_weight: share of the passage embedding in the search vector (0.5: the average).
    """

    DEFAULTS: ClassVar[dict[str, Any]] = {"passage_weight": 0.5}

    def __init__(self, resources: Resources | None = None, **config: Any):
        super().__init__(resources, **config)
        self.settings = settings("hyde", self.DEFAULTS, config)
        self.write_passage = dspy.Predict(HypotheticalPassage)
        self.fallbacks = 0  # LM answers that were unusable, for reports
        self.lm_requests = 0

    def rank(self, query: Query, store: Store, k: int) -> list[ScoredItem]:
        if self.resources.lm is None:
            raise LMRequiredError("retriever 'hyde' needs an LM to write its hypothetical passage; configure one")
        embedder = self.resources.embedder
        vector = embedder.embed_one(query.text)
        self.lm_requests += 1
        passage = ask(self.write_passage, self.resources, check_passage, what="hyde", query=query.text)
        if passage is None:
            self.fallbacks += 1
        else:
            w = float(self.settings["passage_weight"])
            mixed = (1.0 - w) * vector + w * embedder.embed_one(passage)
            norm = float(np.linalg.norm(mixed))
            vector = mixed / norm if norm > 0 else vector
        hits = store.search(vector, k, query.namespace, exclude=self.exclude_fn(query))
        shown = None if passage is None else passage[:300]
        return [ScoredItem(it, float(s), {"dense_score": round(float(s), 6), "dense_rank": r,
                                          "passage": shown, "lm_fallback": passage is None})
                for r, (it, s) in enumerate(hits, start=1)]

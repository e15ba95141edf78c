"""`cbr_rerank` retriever: case-based recall (match the query against each item's source task),
then a rerank of the best candidates by an LM, or by documented features when there is no LM."""
from __future__ import annotations

import logging
from typing import Any, ClassVar

import dspy

from memarch.modules.retrievers._cases import best_cases, case_text
from memarch.modules.retrievers._config import settings
from memarch.modules.stores.lexical import Terms, overlap
from memarch.modules.retrievers._lm import ask
from memarch.modules.retrievers.base import Retriever
from memarch.modules.signatures.retrievers import RerankCandidates
from memarch.modules.stores.base import Store
from memarch.pipeline.episodes import Query
from memarch.pipeline.items import MemoryItem
from memarch.modules.retrievers._aware import AWARENESS
from memarch.modules.retrievers._packing import PACKING
from memarch.pipeline.knobs import TOP_K, Knob
from memarch.pipeline.registry import register
from memarch.pipeline.resources import Resources
from memarch.pipeline.retrieval import ScoredItem
from memarch.pipeline.text_caches import TextCaches

log = logging.getLogger(__name__)


def feature_score(query_terms: list[str], item: MemoryItem,
                  texts: TextCaches | None = None) -> tuple[float, dict[str, float]]:
    """The LM-free stand-in for ``lm / 10``, in [0, 1]: ``0.6 x overlap + 0.4 x utility``.

    ``overlap``: share of the query's terms found in the item's case or text (exact evidence
    the embedding may blur); ``utility``: Laplace-smoothed rate at which the item helped a success
    when it was read (0.5 for an item never rated), so feedback from managers moves it. ``texts``:
    whose memo keeps the item's terms (the retriever's `Resources.texts`).
    """
    lexical = overlap(query_terms, case_text(item) + " " + item.text, texts)
    u = item.usage
    utility = (u.helped_success + 1.0) / (u.helped_success + u.helped_failure + 2.0)
    return 0.6 * lexical + 0.4 * utility, {"overlap": round(lexical, 6), "utility": round(utility, 6)}


def parse_scores(n: int):
    """Checker for the LM's answer: exactly ``n`` integers in 1..10."""
    def check(prediction: dspy.Prediction) -> list[int]:
        scores = list(prediction.scores or [])
        if len(scores) != n:
            raise ValueError(f"expected {n} scores, one per candidate, got {len(scores)}")
        bad = [s for s in scores if not isinstance(s, int) or not 1 <= s <= 10]
        if bad:
            raise ValueError(f"scores must be integers from 1 to 10, got {bad[:3]}")
        return scores
    return check


@register("retriever", "cbr_rerank", rank=3, uses_lm=True, needs_embeddings=True,
          description="case match max(case, 0.7 x content), then LM rerank of ~15 candidates",
          knobs=(TOP_K, Knob("candidates", "int", 5, 50, log=True, default=15, description="candidates reranked"),
                 Knob("content_weight", "float", 0.0, 1.0, default=0.7,
                      description="discount on item-text similarity in the case score"),
                 Knob("cbr_weight", "float", 0.0, 1.0, default=0.5, description="case score's share of the final score"), *PACKING, *AWARENESS))
class CBRRerankRetriever(Retriever):
    """Case-based reasoning: recall by case similarity, then rerank.

    Recall: ``cbr = max(case, content_weight x content)`` over eligible items, where ``case`` is the
    cosine of the query with the item's source task (``fields["task"]``, else its text) and
    ``content`` with the item's text; the best ``candidates`` go to the reranker.
    Rerank: an LM rates each candidate 1-10 and ``score = cbr_weight x cbr + (1 - cbr_weight) x lm/10``.
    Without an LM, or when its answer is unusable after one corrective retry, ``lm/10`` is replaced
    by :func:`feature_score` (query-term overlap and feedback utility); the trace says which.

    Example::

        retriever = CBRRerankRetriever(Resources(lm=dspy.LM("openai/gpt-4o-mini")))
        retriever.retrieve(Query("book a flight to Rome"), store).items[0].trace
        # {"cbr": 0.71, "case": 0.71, "content": 0.52, "rerank": "lm", "lm_score": 9, ...}

    Args:
        content_weight: discount on the content similarity in the case score (AutoMem: 0.7).
        candidates: candidates reranked (AutoMem: about 15; at least ``k``).
        cbr_weight: weight of the case score in the final score (AutoMem: 0.5).
    """

    DEFAULTS: ClassVar[dict[str, Any]] = {"content_weight": 0.7, "candidates": 15, "cbr_weight": 0.5}

    def __init__(self, resources: Resources | None = None, **config: Any):
        super().__init__(resources, **config)
        self.settings = settings("cbr_rerank", self.DEFAULTS, config)
        self.rerank = dspy.Predict(RerankCandidates)
        self.fallbacks = 0  # LM answers that were unusable, for reports
        self.lm_requests = 0

    def rank(self, query: Query, store: Store, k: int) -> list[ScoredItem]:
        cfg = self.settings
        embedder = self.resources.embedder
        matches = best_cases(store, embedder.embed_one(query.text), query.namespace,
                             max(int(cfg["candidates"]), k), content_weight=cfg["content_weight"],
                             embedder=embedder, exclude=self.exclude_fn(query))
        if not matches:
            return []
        lm_scores = self._lm_scores(query, [m.item for m in matches]) if self.resources.lm is not None else None
        w = float(cfg["cbr_weight"])
        texts = self.resources.texts
        terms = Terms.of(texts).tokenize(query.text)
        out = []
        for recall_rank, m in enumerate(matches, start=1):
            trace: dict[str, Any] = {**m.trace(), "recall_rank": recall_rank}
            if lm_scores is not None:
                rerank = lm_scores[recall_rank - 1] / 10.0
                trace.update(rerank="lm", lm_score=lm_scores[recall_rank - 1])
            else:
                rerank, parts = feature_score(terms, m.item, texts)
                trace.update(rerank="features", features=round(rerank, 6), **parts)
                if self.resources.lm is not None:
                    trace["lm_fallback"] = True
            out.append(ScoredItem(m.item, w * m.score + (1.0 - w) * rerank, trace))
        out.sort(key=lambda s: (-s.score, s.trace["recall_rank"]))
        return out[:k]

    def _lm_scores(self, query: Query, items: list[MemoryItem]) -> list[int] | None:
        candidates = []
        for j, it in enumerate(items, start=1):
            task = case_text(it)
            # The source task tells the LM which situation the memory was learned in.
            candidates.append(f"[{j}] {it.text}" + (f" (learned on task: {task})" if task != it.text else ""))
        self.lm_requests += 1
        scores = ask(self.rerank, self.resources, parse_scores(len(items)), what="cbr_rerank",
                     query=query.text, candidates=candidates)
        if scores is None:
            self.fallbacks += 1
        return scores

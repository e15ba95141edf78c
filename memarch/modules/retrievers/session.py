"""`session` retriever: session-first reading. Rank the namespace's sessions (the items' episodes) by
their pooled dense score (the max, or the mean of the best three, of their items' cosines) fused with
BM25 over each session's text (its items' text joined), then rank the items inside the best ``sessions``
sessions by the same fusion at item level; the packing and time/entity levers apply on top, as to
every retriever. Whole-session ranking is the unit of the published LoCoMo retrieval results
(arXiv 2606.04194: max over turns fused with session BM25 by weighted z-scores)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from memarch.modules.retrievers._aware import AWARENESS
from memarch.modules.retrievers._config import settings
from memarch.modules.retrievers._fusion import reciprocal_ranks, zscores
from memarch.modules.retrievers._packing import PACKING
from memarch.modules.retrievers._session_index import session_index
from memarch.modules.retrievers.base import Retriever
from memarch.modules.stores.base import Store
from memarch.modules.stores.lexical import Terms, lexical_index
from memarch.pipeline.episodes import Query
from memarch.pipeline.knobs import TOP_K, Knob
from memarch.pipeline.registry import register
from memarch.pipeline.resources import Resources
from memarch.pipeline.retrieval import ScoredItem

@register("retriever", "session", rank=7, needs_embeddings=True, families="conversation",
          description="session first: sessions ranked by their best items' cosine fused with session BM25, "
                      "then the items of the top sessions",
          knobs=(TOP_K, Knob("sessions", "int", 1, 10, default=3, description="session: the top sessions whose items are read"),
                 Knob("pooling", "int", 0, 1, default=0,
                      description="session: a session's dense score, 0 the max over its items, 1 the mean of its best 3"),
                 Knob("fusion", "int", 0, 1, default=1,
                      description="session: how dense and BM25 fuse, 0 reciprocal rank, 1 weighted z-scores"),
                 Knob("dense_weight", "float", 0.25, 4.0, log=True, default=0.8,
                      description="session: weight of the dense side (the session BM25's is 1)"),
                 Knob("item_lexical_weight", "float", 0.0, 2.0, default=1.0,
                      description="session: weight of the BM25 of a session's best item (MaxP; 0 off)"),
                 Knob("stem", "int", 0, 1, default=0,
                      description="session: BM25 over English Snowball stems (1) or plain terms (0)"),
                 *PACKING, *AWARENESS))
class SessionRetriever(Retriever):
    """Sessions first, then their items.

    A session is the ``episode_id`` the items were written from (an item without one is a session of
    its own). Its dense score pools the cosines of its eligible items (``pooling``: 0 max, 1 mean of
    the best three); its lexical score is BM25 over its items' terms joined (one document per
    session, rebuilt when the namespace changes). Both are fused (``fusion``: 1 weighted z-scores
    over the namespace's sessions, 0 reciprocal rank) with ``dense_weight`` against BM25's 1; with
    ``item_lexical_weight`` > 0 the BM25 of the session's best item (the namespace's item index:
    passage-level evidence, "MaxP") joins the sum with that weight. With ``stem`` 1 both BM25s index
    and read English Snowball stems ("paintings" matches "painted"). The
    items of the ``sessions`` best sessions are then ranked by the same fusion of their own cosine
    and BM25, each item's trace naming its session's rank.

    Example::

        SessionRetriever(resources, sessions=2).retrieve(Query("where does Ann work?"), store, top_k=5)
    """

    name = "session"
    # dense_weight 0.8 and item_lexical_weight 1.0: the best session Hit@1 on LoCoMo's search-split
    # conversations (docs/benchmarks.md, "Session-level retrieval, like for like"); the published
    # two-signal fusion is dense_weight 1.5, item_lexical_weight 0 (a BM25 share of 0.4).
    DEFAULTS: ClassVar[dict[str, Any]] = {"sessions": 3, "pooling": 0, "fusion": 1, "dense_weight": 0.8,
                                          "item_lexical_weight": 1.0, "stem": 0}

    def __init__(self, resources: Resources | None = None, **config: Any):
        super().__init__(resources, **config)
        self.settings = settings("session", self.DEFAULTS, config)

    def rank_sessions(self, query: Query, store: Store) -> "SessionRanking | None":
        """Every session of the query's namespace with an eligible item, best first, with the cosines
        and items it was ranked from (None for an empty namespace)."""
        cfg = self.settings
        ns = query.namespace
        vector = self.resources.embedder.embed_one(query.text)
        dense = store.search(vector, store.count(ns), ns, exclude=self.exclude_fn(query))
        if not dense:
            return None
        cosine = {it.id: float(s) for it, s in dense}
        items = {it.id: it for it, _ in dense}
        groups: dict[str, list[str]] = {}
        for it, _ in dense:  # best first: a group's first member is its best item
            groups.setdefault(session_of(it), []).append(it.id)
        names = list(groups)
        pooled = np.array([_pool([cosine[i] for i in groups[s]], int(cfg["pooling"])) for s in names])
        stem = bool(int(cfg["stem"]))
        terms = Terms.of(self.resources.texts).analyzer(stem)(query.text)
        lexical = session_index(store, ns, stem=stem).scores(groups, items, store, terms)
        fused = _fuse(pooled, lexical, cfg)
        weight = float(cfg["item_lexical_weight"])
        if weight > 0:  # passage-level evidence: the session's best item by BM25 (MaxP)
            per_item = lexical_index(store, ns, stem=stem).scores_of(terms, list(items))  # one scoring for all sessions
            at = {iid: j for j, iid in enumerate(items)}
            best = np.array([per_item[[at[i] for i in groups[s]]].max() for s in names])
            fused = fused + weight * _norm(cfg)(best)
        order = sorted(range(len(names)), key=lambda j: (-fused[j], j))
        return SessionRanking([names[j] for j in order], [float(fused[j]) for j in order], groups, cosine, items, terms)

    def rank(self, query: Query, store: Store, k: int) -> list[ScoredItem]:
        cfg = self.settings
        embedder = self.resources.embedder
        # Two reads of one query on an unchanged store (a read, then the deeper read of a failure's
        # diagnosis) rank the same items: the second takes a longer prefix.
        key = (query.text, query.namespace, query.episode_id, store.version(query.namespace),
               tuple(sorted(cfg.items())), id(embedder), getattr(embedder, "model", None))
        cache = store.caches.part(__name__)  # the last ranking of this store: (key, ranked items)
        last = cache.get("last")
        if last is not None and last[0] == key:
            ranked = last[1]
        else:
            ranked = self._ranked(query, store)
            cache["last"] = (key, ranked)
        fusion = "zscore" if int(cfg["fusion"]) == 1 else "rrf"
        return [ScoredItem(item, score, {"session": s, "session_rank": rank, "session_score": session_score,
                                         "dense_score": dense, "lexical_score": lexical, "fusion": fusion})
                for item, score, s, rank, session_score, dense, lexical in ranked[:k]]

    def _ranked(self, query: Query, store: Store) -> list[tuple]:
        """Every item of the top sessions, best first: (item, score, session, session rank, session
        score, cosine, BM25), the last three rounded as traces show them."""
        cfg = self.settings
        ranking = self.rank_sessions(query, store)
        if ranking is None:
            return []
        top = ranking.sessions[:max(1, int(cfg["sessions"]))]
        chosen = {s: r for r, s in enumerate(top, start=1)}
        score_of = dict(zip(ranking.sessions, ranking.scores))
        members = [i for s in top for i in ranking.groups[s]]  # eligible: the dense search excluded the rest
        # The members' BM25 (a member BM25 does not match scores 0), one scoring for all of them
        lexical = lexical_index(store, query.namespace, stem=bool(int(cfg["stem"]))).scores_of(ranking.terms, members)
        bm25 = np.where(lexical > 0, lexical, 0.0)
        cosine, items = ranking.cosine, ranking.items
        item_scores = _fuse(np.array([cosine[i] for i in members]), bm25, cfg)
        out = []
        for j in sorted(range(len(members)), key=lambda j: (-item_scores[j], j)):
            iid = members[j]
            s = session_of(items[iid])
            out.append((items[iid], float(item_scores[j]), s, chosen[s], round(score_of[s], 6),
                        round(cosine[iid], 6), round(float(bm25[j]), 6)))
        return out


@dataclass
class SessionRanking:
    """A query's sessions best first (``scores`` their fused scores), each session's eligible item
    ids best first (``groups``), the items' cosines, the items and the query's BM25 terms."""

    sessions: list[str]
    scores: list[float]
    groups: dict[str, list[str]]
    cosine: dict[str, float]
    items: dict[str, Any]
    terms: list[str]


def session_of(item: Any) -> str:
    """The session an item belongs to: the episode it was written from (else the item itself)."""
    return item.episode_id or item.id


def _pool(values: list[float], pooling: int) -> float:
    """Max (0) or the mean of the best three (1) of a session's item scores (given best first)."""
    return values[0] if pooling == 0 else float(np.mean(values[:3]))


def _norm(cfg: dict[str, Any]):
    return zscores if int(cfg["fusion"]) == 1 else reciprocal_ranks


def _fuse(dense: np.ndarray, lexical: np.ndarray, cfg: dict[str, Any]) -> np.ndarray:
    norm = _norm(cfg)
    return float(cfg["dense_weight"]) * norm(dense) + norm(lexical)

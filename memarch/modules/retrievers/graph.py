"""`graph` retriever: dense seeds in a graph-family store, expanded along content edges with a
decay per hop; every item's trace records the path that reached it."""
from __future__ import annotations

from typing import Any, ClassVar

from memarch.errors import MemarchError
from memarch.modules.retrievers._config import settings
from memarch.modules.retrievers.base import Retriever, eligible
from memarch.modules.stores.base import Store
from memarch.pipeline.episodes import Query
from memarch.modules.retrievers._aware import AWARENESS
from memarch.modules.retrievers._packing import PACKING
from memarch.pipeline.knobs import TOP_K, Knob
from memarch.pipeline.registry import register
from memarch.pipeline.resources import Resources
from memarch.pipeline.retrieval import ScoredItem


@register("retriever", "graph", rank=4, needs_embeddings=True, requires_store=("graph",),
          description="3 semantic seeds, 1-hop expansion along SIMILAR/COOCCURS/REINFORCES, decay 0.7",
          knobs=(TOP_K, Knob("seeds", "int", 1, 10, default=3, description="semantic seeds"),
                 Knob("hops", "int", 0, 3, default=1, description="expansion depth"),
                 Knob("decay", "float", 0.1, 1.0, default=0.7, description="score factor per hop"), *PACKING, *AWARENESS))
class GraphRetriever(Retriever):
    """Seeds are the ``seeds`` items nearest the query (score = cosine). Expansion follows the
    store's ``neighbors`` along ``edge_types`` for ``hops`` hops: a neighbour reached from an item
    with score ``s`` over an edge of weight ``w`` scores ``s x min(1, decay x w)`` and is kept if it
    reaches ``min_score``; an item reached several ways keeps its best path. Seeds and neighbours
    are then ranked together by score.

    The trace is what the ``graph_consolidate`` manager reads to reinforce edges:
    ``{"seed": seed id, "hop": 0|1|..., "edge_type": last edge or None,
    "path": [seed id, [edge type, item id], ...], "seed_score": cosine}``.

    Example::

        retriever = GraphRetriever(resources)
        retriever.retrieve(Query("what does Caroline do?"), graph_store).items[1].trace
        # {"seed": "fact-1a..", "hop": 1, "edge_type": "COOCCURS", "path": ["fact-1a..", ["COOCCURS", "fact-9c.."]], ...}

    Args:
        seeds: semantic seeds (AutoMem: 3).
        edge_types: content edges followed (AutoMem: SIMILAR, COOCCURS, REINFORCES).
        hops: expansion depth (AutoMem: 1).
        decay: factor per hop (AutoMem: 0.7).
        min_score: expanded items below this are dropped (AutoMem: 0.1).
    """

    DEFAULTS: ClassVar[dict[str, Any]] = {"seeds": 3, "edge_types": ("SIMILAR", "COOCCURS", "REINFORCES"),
                                          "hops": 1, "decay": 0.7, "min_score": 0.1}

    def __init__(self, resources: Resources | None = None, **config: Any):
        super().__init__(resources, **config)
        self.settings = settings("graph", self.DEFAULTS, config)

    def rank(self, query: Query, store: Store, k: int) -> list[ScoredItem]:
        if not callable(getattr(store, "neighbors", None)):
            raise MemarchError(f"retriever 'graph' needs a graph-family store, not {store.name!r}")
        cfg = self.settings
        vector = self.resources.embedder.embed_one(query.text)
        seeds = store.search(vector, int(cfg["seeds"]), query.namespace, exclude=self.exclude_fn(query))
        best: dict[str, ScoredItem] = {}
        for item, score in seeds:
            best[item.id] = ScoredItem(item, float(score), {
                "seed": item.id, "hop": 0, "edge_type": None, "path": [item.id],
                "seed_score": round(float(score), 6)})

        frontier = list(best.values())
        edge_types = list(cfg["edge_types"])
        for hop in range(1, int(cfg["hops"]) + 1):
            reached: list[ScoredItem] = []
            for src in frontier:
                for nid, edge_type, weight in store.neighbors(src.item.id, query.namespace, edge_types=edge_types):
                    # Edge weights run up to 5 (co-occurrence counts, reinforcement), so the factor is
                    # capped at 1: a neighbour never outscores the item it was reached from.
                    score = src.score * min(1.0, float(cfg["decay"]) * float(weight))
                    if score < cfg["min_score"] or (nid in best and best[nid].score >= score):
                        continue
                    item = store.get(nid, query.namespace)
                    if item is None or not eligible(item, query):
                        continue
                    best[nid] = ScoredItem(item, score, {
                        "seed": src.trace["seed"], "hop": hop, "edge_type": edge_type,
                        "edge_weight": round(float(weight), 6), "path": [*src.trace["path"], [edge_type, nid]],
                        "seed_score": src.trace["seed_score"]})
                    reached.append(best[nid])
            frontier = reached
        ranked = sorted(best.values(), key=lambda s: (-s.score, s.trace["hop"], s.item.id))
        for s in ranked:
            s.trace["score"] = round(s.score, 6)
        return ranked[:k]

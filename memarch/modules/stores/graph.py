"""`graph` store: a networkx graph per namespace with query -> content -> entity layers and the typed
content edges of AutoMem, built without an LM (heuristic entities, kNN similarity).

Contract used by the graph retriever and the graph_consolidate manager (content nodes are item ids;
only active items are ever returned):

    neighbors(item_id, namespace="default", edge_types=None) -> list[(neighbour_id, edge_type, weight)]
        content neighbours over both edge directions, strongest first.
    entities(item_id, namespace="default") -> list[str]          normalised entity names of an item.
    items_for_entity(entity, namespace="default") -> list[str]   active items mentioning an entity.
    adjust_edge(u, v, edge_type, delta, namespace="default") -> float
        add ``delta`` to the edge's weight (a missing edge counts as 0 and is created); the new weight,
        clipped to [0, 5], is returned.
    add_edge(u, v, edge_type, weight=1.0, namespace="default")   set (or create) an edge; both ends
        must be content nodes of the namespace.
    graph(namespace="default") -> networkx.MultiDiGraph          the live graph (do not add nodes).

Nodes carry ``layer`` ("query" | "content" | "entity"); query nodes are ``"query:<task>"``, entity
nodes ``"entity:<name>"``. Edges are keyed by type and carry ``type`` and ``weight``: SOURCE
(query -> content), MENTIONS (content -> entity) and the content edges SIMILAR, DEPENDS, CONFLICTS,
SUPERSEDES, COOCCURS, REINFORCES (symmetric ones are stored once, in either direction).
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, ClassVar, Mapping

import networkx as nx
import numpy as np

from memarch.modules.stores._entities import extract_entities, normalise
from memarch.modules.stores.vector import VectorStore
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.registry import register
from memarch.pipeline.resources import Resources

logger = logging.getLogger(__name__)

CONTENT_EDGES = ("SIMILAR", "DEPENDS", "CONFLICTS", "SUPERSEDES", "COOCCURS", "REINFORCES")
SYMMETRIC = frozenset({"SIMILAR", "CONFLICTS", "COOCCURS", "REINFORCES"})
# Edges the store derives from an item's text and vector; rebuilt when the text changes.
DERIVED = frozenset({"SIMILAR", "CONFLICTS", "COOCCURS", "REINFORCES", "MENTIONS"})
MAX_WEIGHT = 5.0
OPPOSITE = frozenset({"success", "failure"})


def _edge_type(name: str) -> str:
    # Managers may add their own edge types; the layer edges are the store's own.
    if not isinstance(name, str) or not name or name in ("SOURCE", "MENTIONS"):
        raise ValueError(f"not a content edge type: {name!r} (typed ones: {', '.join(CONTENT_EDGES)})")
    return name


def _clip(w: float) -> float:
    return float(min(MAX_WEIGHT, max(0.0, w)))


@register("store", "graph", rank=4, needs_embeddings=True, provides=("graph",),
          description="networkx query/content/entity graph with typed edges (no LM)")
class GraphStore(VectorStore):
    """Items as content nodes linked to their task, their entities and each other.

    Example::

        store = GraphStore(resources)
        store.add(items)
        store.neighbors(items[0].id, edge_types=["SIMILAR", "COOCCURS"])
        store.items_for_entity("Caroline")

    Args:
        similar_threshold: cosine for a SIMILAR edge (default 0.6).
        similar_k: nearest neighbours examined per new item (default 8); keeps building O(n k).
        conflict_threshold: cosine above which opposite outcomes CONFLICT (default 0.85).
        reinforce_threshold: cosine above which equal known outcomes REINFORCE (default 0.85).
        cooccur_cap: COOCCURS edges per new item, to the items sharing most entities (default 5).
        max_terms: frequent content words kept as entities per item (default 3).
        knn_nprobe: IVF lists visited by the kNN of edge building (default: ``nprobe``, 16); lower
            is faster and finds fewer SIMILAR edges (recall@8 0.90 / 0.80 / 0.72 at 16 / 8 / 4).
        index: dense index for search and kNN, default ``"ivf"`` (exact below ``ivf_min_items``,
            default 10000).
    """

    # Its own state is the graph (`_digest_parts`); the key and episode-tail maps follow from the records
    _digest_covers_state: ClassVar[bool] = True

    def __init__(self, resources: Resources | None = None, **config: Any):
        # kNN for SIMILAR edges runs on every add: approximate search pays off earlier than for `vector`.
        config.setdefault("index", "ivf")
        config.setdefault("ivf_min_items", 10000)
        super().__init__(resources, **config)
        self.similar_threshold = float(config.get("similar_threshold", 0.6))
        self.similar_k = int(config.get("similar_k", 8))
        self.conflict_threshold = float(config.get("conflict_threshold", 0.85))
        self.reinforce_threshold = float(config.get("reinforce_threshold", 0.85))
        self.cooccur_cap = int(config.get("cooccur_cap", 5))
        self.max_terms = int(config.get("max_terms", 3))
        self.knn_nprobe = int(config.get("knn_nprobe", self.nprobe))
        self._graphs: dict[str, nx.MultiDiGraph] = {}
        # Derived from the records (rebuilt on load): active ids per key, last item per episode.
        self._by_key: dict[str, dict[str, set[str]]] = {}
        self._key_of: dict[str, dict[str, str]] = {}
        self._episode_tail: dict[str, dict[str, str]] = {}

    # -- public graph API -------------------------------------------------------------------------
    def graph(self, namespace: str = "default") -> nx.MultiDiGraph:
        return self._graphs.get(namespace) or nx.MultiDiGraph()

    def _active(self, namespace: str, item_id: str) -> bool:
        it = self._records.get(namespace, {}).get(item_id)
        return it is not None and it.active

    def neighbors(self, item_id: str, namespace: str = "default",
                  edge_types: list[str] | tuple[str, ...] | set[str] | None = None) -> list[tuple[str, str, float]]:
        g = self._graphs.get(namespace)
        if g is None or item_id not in g:
            return []
        types = None if edge_types is None else set(edge_types)
        best: dict[tuple[str, str], float] = {}
        edges = [(v, k, d) for _, v, k, d in g.out_edges(item_id, keys=True, data=True)]
        edges += [(u, k, d) for u, _, k, d in g.in_edges(item_id, keys=True, data=True)]
        for other, etype, data in edges:
            if other == item_id or (types is not None and etype not in types):
                continue
            if g.nodes[other].get("layer") != "content" or not self._active(namespace, other):
                continue
            w = float(data.get("weight", 1.0))
            best[(other, etype)] = max(w, best.get((other, etype), w))
        return [(o, t, w) for (o, t), w in sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))]

    def entities(self, item_id: str, namespace: str = "default") -> list[str]:
        g = self._graphs.get(namespace)
        if g is None or item_id not in g:
            return []
        return [g.nodes[v]["name"] for _, v, k in g.out_edges(item_id, keys=True) if k == "MENTIONS"]

    def items_for_entity(self, entity: str, namespace: str = "default") -> list[str]:
        g = self._graphs.get(namespace)
        node = self._entity_id(entity)
        if g is None or node not in g:
            return []
        return [u for u, _, k in g.in_edges(node, keys=True) if k == "MENTIONS" and self._active(namespace, u)]

    def add_edge(self, u: str, v: str, edge_type: str, weight: float = 1.0, namespace: str = "default") -> None:
        g = self._content_pair(u, v, namespace)
        self._link(g, u, v, _edge_type(edge_type), _clip(weight))
        self._bump(namespace)

    def adjust_edge(self, u: str, v: str, edge_type: str, delta: float, namespace: str = "default") -> float:
        g = self._content_pair(u, v, namespace)
        edge_type = _edge_type(edge_type)
        ends = self._find_edge(g, u, v, edge_type)
        new = _clip((g.edges[(*ends, edge_type)]["weight"] if ends else 0.0) + float(delta))
        self._link(g, u, v, edge_type, new)
        self._bump(namespace)
        return new

    # -- edge helpers -----------------------------------------------------------------------------
    def _content_pair(self, u: str, v: str, namespace: str) -> nx.MultiDiGraph:
        g = self._graphs.get(namespace)
        for n in (u, v):
            if g is None or n not in g or g.nodes[n].get("layer") != "content":
                raise KeyError(f"no content node {n!r} in namespace {namespace!r}")
        if u == v:
            raise ValueError(f"an edge needs two different items, got {u!r} twice")
        return g

    @staticmethod
    def _find_edge(g: nx.MultiDiGraph, u: str, v: str, etype: str) -> tuple[str, str] | None:
        if g.has_edge(u, v, key=etype):
            return (u, v)
        if etype in SYMMETRIC and g.has_edge(v, u, key=etype):
            return (v, u)
        return None

    def _link(self, g: nx.MultiDiGraph, u: str, v: str, etype: str, weight: float, **data: Any) -> None:
        """Set the ``etype`` edge between ``u`` and ``v`` (a symmetric one in whichever direction exists)."""
        # Straight on networkx's adjacency dicts: this runs tens of times per added item.
        adj = g._adj
        if etype in SYMMETRIC and etype not in adj[u].get(v, ()) and etype in adj[v].get(u, ()):
            u, v = v, u
        attrs = adj[u].get(v, {}).get(etype)
        if attrs is not None:  # the same dict networkx keeps for the edge in both directions
            attrs.update(type=etype, weight=float(weight), **data)
        else:
            g.add_edge(u, v, key=etype, type=etype, weight=float(weight), **data)

    @staticmethod
    def _entity_id(name: str) -> str:
        return f"entity:{normalise(name)}"

    def _query_of(self, item: MemoryItem) -> str | None:
        task = item.fields.get("task")
        return str(task) if task else item.episode_id

    # -- building ---------------------------------------------------------------------------------
    def _extract(self, namespace: str, items: list[MemoryItem]) -> list[list[str]]:
        """Entity names per item (the LM-free heuristic; llm_graph overrides)."""
        return [extract_entities(it.text, max_terms=self.max_terms, texts=self.resources.texts) for it in items]

    def _activate(self, namespace: str, items: list[MemoryItem], vectors: np.ndarray) -> None:
        super()._activate(namespace, items, vectors)
        g = self._graphs.setdefault(namespace, nx.MultiDiGraph())
        recs = self._records[namespace]
        by_key = self._by_key.setdefault(namespace, {})
        tails = self._episode_tail.setdefault(namespace, {})
        # Nodes first, so edges between items of one batch land on complete nodes.
        new_ids = set()
        for it in items:
            if it.id in g:
                self._drop_derived(g, it.id)
            else:
                new_ids.add(it.id)
            g.add_node(it.id, layer="content", kind=it.kind, active=True, status=it.status)
        hits = self._indexes[namespace].search_many(vectors, self.similar_k + 1, nprobe=self.knn_nprobe)
        floor = min(self.similar_threshold, self.conflict_threshold, self.reinforce_threshold)
        for it, names, nbrs in zip(items, self._extract(namespace, items), hits):
            query = self._query_of(it)
            if query:
                qn = f"query:{query}"
                if qn not in g:
                    g.add_node(qn, layer="query", text=query)
                self._link(g, qn, it.id, "SOURCE", 1.0)
            if it.id in new_ids and it.episode_id:
                prev = tails.get(it.episode_id)
                if prev and prev != it.id and prev in g:
                    self._link(g, prev, it.id, "DEPENDS", 1.0)
                tails[it.episode_id] = it.id
            self._link_entities(g, namespace, it, names)
            if it.key:
                for other in sorted(by_key.get(it.key, set()) - {it.id}):
                    if recs[other].active and recs[other].text != it.text:
                        self._link(g, it.id, other, "CONFLICTS", 1.0, reason="same key")
            self._index_key(namespace, it)
            for other, sim in nbrs:  # best first: stop below the lowest threshold
                if sim < floor:
                    break
                if other != it.id:
                    self._link_similar(g, it, recs[other], sim)

    def _index_key(self, namespace: str, item: MemoryItem) -> None:
        self._unindex_key(namespace, item.id)
        if item.key:
            self._by_key.setdefault(namespace, {}).setdefault(item.key, set()).add(item.id)
            self._key_of.setdefault(namespace, {})[item.id] = item.key

    def _unindex_key(self, namespace: str, item_id: str) -> None:
        key = self._key_of.get(namespace, {}).pop(item_id, None)
        if key is not None:
            self._by_key[namespace][key].discard(item_id)

    def _refresh(self, namespace: str, items: list[MemoryItem]) -> None:
        super()._refresh(namespace, items)
        g = self._graphs.get(namespace)
        for it in items:
            self._index_key(namespace, it)
            if g is not None and it.id in g:
                g.nodes[it.id].update(kind=it.kind, status=it.status)

    def _link_entities(self, g: nx.MultiDiGraph, namespace: str, item: MemoryItem, names: list[str]) -> None:
        """MENTIONS edges to the item's entities; COOCCURS edges to the ``cooccur_cap`` items that share
        the most of them (weight = entities shared), found among each entity's latest mentions."""
        recs, cap, link = self._records[namespace], self.cooccur_cap, self._link
        shared: dict[str, int] = {}
        for name in names:
            canonical = normalise(name)
            if not canonical:
                continue
            node = f"entity:{canonical}"
            if node not in g:
                g.add_node(node, layer="entity", name=canonical)
            # Newest mentions only (networkx keeps insertion order): a common entity must cost
            # neither a scan of all its mentions nor an all-pairs clique.
            pred, seen = g._pred[node], 0
            for u in reversed(pred):
                if seen >= 2 * cap:
                    break
                if u != item.id and "MENTIONS" in pred[u] and recs[u].active:
                    shared[u] = shared.get(u, 0) + 1
                    seen += 1
            link(g, item.id, node, "MENTIONS", 1.0)
        for other, n in sorted(shared.items(), key=lambda kv: -kv[1])[:cap]:
            link(g, item.id, other, "COOCCURS", _clip(float(n)))

    def _link_similar(self, g: nx.MultiDiGraph, item: MemoryItem, other: MemoryItem, sim: float) -> None:
        w = _clip(sim)
        if sim >= self.similar_threshold:
            self._link(g, item.id, other.id, "SIMILAR", w)
        if sim >= self.conflict_threshold and {item.outcome, other.outcome} == OPPOSITE:
            self._link(g, item.id, other.id, "CONFLICTS", w, reason="opposite outcomes")
        if sim >= self.reinforce_threshold and item.outcome == other.outcome != "unknown":
            self._link(g, item.id, other.id, "REINFORCES", w)

    @staticmethod
    def _drop_derived(g: nx.MultiDiGraph, node: str) -> None:
        edges = [(u, v, k) for u, v, k in g.out_edges(node, keys=True) if k in DERIVED]
        edges += [(u, v, k) for u, v, k in g.in_edges(node, keys=True) if k in DERIVED]
        g.remove_edges_from(edges)

    def _deactivate(self, namespace: str, item_ids: list[str]) -> None:
        super()._deactivate(namespace, item_ids)
        g = self._graphs.get(namespace)
        recs = self._records.get(namespace, {})
        for iid in item_ids:
            it = recs.get(iid)
            self._unindex_key(namespace, iid)
            if g is None or iid not in g:
                continue
            status = it.status if it is not None and not it.active else "deleted"
            g.nodes[iid].update(active=False, status=status)
            if it is not None and status == "superseded":
                for entry in it.lineage:
                    if entry.action.startswith("supersed"):
                        for newer in entry.related:
                            if newer in g and newer != iid:
                                self._link(g, newer, iid, "SUPERSEDES", 1.0)

    # -- state digest -----------------------------------------------------------------------------
    def _digest_parts(self, namespace: str, actors: Mapping[str, str]) -> dict[str, Any]:
        parts = super()._digest_parts(namespace, actors)
        g = self._graphs.get(namespace)
        # Node attributes and the adjacency (edge keys and attributes), in networkx's own order.
        parts["graph"] = () if g is None else (dict(g.nodes(data=True)), dict(g.adjacency()))
        return parts

    # -- persistence ------------------------------------------------------------------------------
    def _extra_state(self, directory: Path) -> dict:
        out = super()._extra_state(directory)
        out["graphs"] = {ns: nx.node_link_data(g, edges="edges") for ns, g in self._graphs.items()}
        return out

    def _load_extra(self, state: dict, directory: Path) -> None:
        self._graphs = {ns: nx.node_link_graph(d, directed=True, multigraph=True, edges="edges")
                        for ns, d in state.get("graphs", {}).items()}
        self._by_key, self._key_of, self._episode_tail = {}, {}, {}
        for ns, recs in self._records.items():
            tails = self._episode_tail.setdefault(ns, {})
            for it in recs.values():  # insertion order, as saved
                if it.active:
                    self._index_key(ns, it)
                if it.episode_id:
                    tails[it.episode_id] = it.id
        super()._load_extra(state, directory)
        for ns, recs in self._records.items():
            active = [it for it in recs.values() if it.active]
            if active and ns not in self._graphs:
                logger.warning("namespace %r: saved graph missing; rebuilding it", ns)
                self._activate(ns, active, self.vectors(active))

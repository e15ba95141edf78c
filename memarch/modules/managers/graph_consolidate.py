"""`graph_consolidate` manager: merges near-duplicates and generalises memories that recur across
episodes into one linked memory; retrieval feedback re-weights the graph edges it traversed."""
from __future__ import annotations

import logging
from typing import Any

import dspy

from memarch.modules.managers._budget_policies import generalise_groups
from memarch.modules.managers._consolidation import clusters, general_item, medoid, merge_cluster
from memarch.modules.managers._floor import FloorManager, floor_knobs
from memarch.modules.managers._judge import Judge
from memarch.modules.signatures.managers import GeneraliseMemories
from memarch.modules.stores.base import Store
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.registry import register
from memarch.pipeline.resources import Resources
from memarch.pipeline.retrieval import Retrieval

REINFORCES = "REINFORCES"
log = logging.getLogger(__name__)


def traversed(path: list) -> list[tuple[str, str, str]]:
    """Edges (u, v, type) of a graph retriever path ``[seed, [type, id], [type, id], ...]``."""
    out, prev = [], path[0] if path and isinstance(path[0], str) else None
    for hop in path[1:]:
        if prev is None or not (isinstance(hop, (list, tuple)) and len(hop) == 2):
            break
        out.append((prev, str(hop[1]), str(hop[0])))
        prev = str(hop[1])
    return out


def orient(store: Store, namespace: str, edge: tuple[str, str, str]) -> tuple[str, str, str]:
    """The edge as the graph stores it: the retriever also walks edges backwards (in-edges)."""
    u, v, edge_type = edge
    graph = store.graph(namespace) if hasattr(store, "graph") else None
    if graph is not None and not graph.has_edge(u, v, key=edge_type) and graph.has_edge(v, u, key=edge_type):
        return v, u, edge_type
    return edge


@register("manager", "graph_consolidate", rank=4, uses_lm=True, needs_embeddings=True,
          requires_store=("graph",), requires_retriever=("graph",),
          description="merge + generalise across tasks, edge-weight feedback from graph traversals",
          knobs=floor_knobs(dedup=0.95, decay=1.0))
class GraphConsolidateManager(FloorManager):
    """Consolidation for graph stores (A-MEM / Zep style).

    Periodically: clusters at cosine >= ``merge_threshold`` merge into their most useful member;
    clusters at cosine >= ``generalise_threshold`` spanning >= ``generalise_min`` items from 2+
    episodes get one general memory (LM: `GeneraliseMemories`; LM-free: the cluster's medoid
    text), linked to every member by a REINFORCES edge. Feedback: besides the floor's boost /
    penalty, each edge on a retrieved item's traversal path (the graph retriever's
    ``trace["path"]``) gains ``edge_delta`` on success and loses it on failure.

    Example::

        manager = GraphConsolidateManager(resources)
        retrieval = graph_retriever.retrieve(query, graph_store)
        manager.feedback(retrieval, True, graph_store)   # edges seed -> item strengthened

    Config (beyond the floor's): ``merge_threshold`` (0.92), ``generalise`` (True; False by
    default for conversation memory), ``generalise_threshold`` (0.75), ``generalise_min`` (3) /
    ``generalise_max`` (8) members, ``edge_delta`` (0.1), ``max_generalisations`` (5 a pass),
    ``budget_merge_threshold`` (0.8), ``neighbour_threshold`` (0.6).

    Memory budget (``memory_budget``): over budget, groups of related memories (near-duplicates at
    cosine >= ``budget_merge_threshold``, and graph neighbours over SIMILAR / COOCCURS / REINFORCES
    edges at cosine >= ``neighbour_threshold``; at most ``generalise_max`` each, largest first)
    become one generalised node each (LM: `GeneraliseMemories`; LM-free: the medoid's text) before
    the lowest utility is pruned.
    """

    def __init__(self, resources: Resources | None = None, **config: Any):
        super().__init__(resources, **config)
        self.merge_threshold = float(config.get("merge_threshold", 0.92))
        self.generalise_threshold = float(config.get("generalise_threshold", 0.75))
        self.generalise_min = int(config.get("generalise_min", 3))
        self.edge_delta = float(config.get("edge_delta", 0.1))
        self.max_generalisations = int(config.get("max_generalisations", 5))
        self.generalise_max = int(config.get("generalise_max", 8))
        self.generalise = bool(config.get("generalise", True))
        self.generaliser = dspy.Predict(GeneraliseMemories)
        self._generaliser = Judge(self.generaliser, self.resources, self.actor)
        self.budget_merge_threshold = float(config.get("budget_merge_threshold", 0.8))
        self.neighbour_threshold = float(config.get("neighbour_threshold", 0.6))

    @property
    def budget_judge(self) -> Judge:
        return self._generaliser

    def budget_steps(self) -> list:
        return [lambda *a: generalise_groups(self, *a)]

    # -- feedback: edge weights ------------------------------------------------------------------
    def feedback(self, retrieval: Retrieval, success: bool | None, store: Store) -> None:
        super().feedback(retrieval, success, store)
        if success is None or not hasattr(store, "adjust_edge"):
            return
        delta = self.edge_delta if success else -self.edge_delta
        ns = retrieval.query.namespace
        at = self.at(store, ns, retrieval.query.time)
        # One adjustment per edge per read, whichever way the retriever walked it; the lineage
        # entry goes to the item the walk reached.
        walked: dict[tuple[str, str, str], tuple[str, str, str]] = {}
        for scored in retrieval.items:
            for edge in traversed(scored.trace.get("path") or []):
                walked.setdefault(orient(store, ns, edge), edge)
        for stored, (u, v, edge_type) in sorted(walked.items()):
            try:
                weight = store.adjust_edge(*stored, delta, ns)
            except (KeyError, ValueError) as exc:  # an end left the graph since the read
                log.debug("%s: edge %s -%s-> %s not adjusted (%s)", self.actor, u, edge_type, v, exc)
                continue
            item = store.get(v, ns)
            if item is not None:
                item.log("edge_adjusted", self.actor,
                         f"{edge_type} edge from {u} {'reinforced' if success else 'weakened'}", [u], at,
                         edge_type=edge_type, weight=round(float(weight), 4))
                store.update(item)

    # -- periodic: merge and generalise ----------------------------------------------------------
    def periodic(self, store: Store, namespace: str) -> None:
        self.merge(store, namespace)
        if self.setting("generalise", store, namespace):
            self.generalise_clusters(store, namespace)
        super().periodic(store, namespace)

    def merge(self, store: Store, namespace: str) -> int:
        # General memories resemble their members by design; merging them back would undo them.
        items = [it for it in store.list(namespace) if not it.fields.get("generalised")]
        if len(items) < 2:
            return 0
        now = self.tick(store, namespace)
        groups = clusters(items, store.vectors(items), float(self.setting("merge_threshold", store, namespace)),
                          texts=store.resources.texts)
        for g in groups:
            merge_cluster(self, [items[i] for i in g], store, lambda it: self.utility(it, now))
        return len(groups)

    def generalise_clusters(self, store: Store, namespace: str) -> int:
        """Returns the number of general memories written."""
        items = store.list(namespace)
        if len(items) < self.generalise_min:
            return 0
        vecs = store.vectors(items)
        made = 0
        for g in clusters(items, vecs, self.generalise_threshold, max_size=self.generalise_max, content=False,
                          texts=store.resources.texts):
            members = [items[i] for i in g]
            general = next((m for m in members if m.fields.get("generalised")), None)
            if general is not None:
                self._link(general, [m for m in members if m is not general], store, namespace)
                continue
            done = sum(1 for m in members if any(e.action == "generalised_into" for e in m.lineage))
            episodes = {m.episode_id for m in members}
            if len(members) < self.generalise_min or len(episodes) < 2 or 2 * done > len(members):
                continue  # too small, one episode only, or mostly generalised already
            if made >= self.max_generalisations:
                break
            pred = self._generaliser(check=lambda p: bool(str(p.general_memory).strip()),
                                     memories=[m.text for m in members])
            if pred is not None:
                text = str(pred.general_memory).strip()
            else:
                text = f"Across {len(episodes)} episodes: {members[medoid(vecs[g])].text}"
            general = general_item(members, text, namespace)
            at = self.at(store, namespace, general.event_time)
            how = "LM generalisation" if pred is not None else "medoid of the cluster"
            general.log("generalised_from", self.actor, f"{how} over {len(members)} memories from "
                        f"{len(general.fields['episodes'])} episodes", [m.id for m in members], at)
            store.add([general])
            self._link(general, members, store, namespace)
            made += 1
        return made

    def _link(self, general: MemoryItem, members: list[MemoryItem], store: Store, namespace: str) -> None:
        """Members point at their general memory: lineage, and a REINFORCES edge in a graph store."""
        at = self.at(store, namespace, general.event_time)
        for m in members:
            if any(e.action == "generalised_into" and general.id in e.related for e in m.lineage):
                continue
            m.log("generalised_into", self.actor, "part of a cross-episode cluster", [general.id], at)
            store.update(m)
            if hasattr(store, "add_edge"):
                store.add_edge(general.id, m.id, REINFORCES, weight=1.0, namespace=namespace)
            if m.id not in general.fields["generalised_from"]:
                general.fields["generalised_from"].append(m.id)
                general.fields["episodes"] = sorted(set(general.fields["episodes"]) | {m.episode_id} - {None})
                store.update(general)

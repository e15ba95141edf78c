"""`llm_graph` store: a temporal knowledge graph (Zep/Graphiti-style) — an LM extracts entities and
dated facts from each item and deduplicates entities; facts are edges between entity nodes."""
from __future__ import annotations

import difflib
import logging
from typing import Any

import dspy
import networkx as nx
import numpy as np

from memarch.errors import LMRequiredError
from memarch.modules.signatures.stores import ExtractGraph, ResolveEntities
from memarch.modules.stores._entities import extract_entities, normalise
from memarch.modules.stores.graph import GraphStore
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.registry import register
from memarch.pipeline.resources import Resources

logger = logging.getLogger(__name__)

try:  # where dspy keeps it has moved between releases
    from dspy.utils.exceptions import AdapterParseError
except ImportError:  # pragma: no cover
    AdapterParseError = ValueError  # type: ignore[assignment,misc]

# What an unusable LM answer raises: the adapter's parse error, pydantic's ValidationError (a
# ValueError), or a field of the wrong shape.
UNPARSABLE = (AdapterParseError, ValueError, TypeError, KeyError, AttributeError)
FACT = "FACT"


@register("store", "llm_graph", rank=5, needs_lm=True, needs_embeddings=True, provides=("graph",),
          description="temporal knowledge graph: LM-extracted, deduplicated entities and facts")
class LLMGraphStore(GraphStore):
    """The `graph` store whose entities and facts come from an LM.

    On add, ``ExtractGraph`` returns entities and (subject, predicate, object, valid_at) facts;
    each entity is matched to the graph by normalised name, and names that are only close to
    existing ones go to ``ResolveEntities``, which decides duplicates. A fact becomes a ``FACT``
    edge between two entity nodes with the item as provenance. Unparsable answers get one
    corrective retry, then the heuristic extraction of `graph` (logged).

    Example::

        store = LLMGraphStore(Resources(lm=dspy.LM("openai/gpt-4o-mini")))
        store.add(items)
        store.facts(entity="Caroline")   # [{"subject": "caroline", "predicate": "moved to", ...}]

    Args:
        near_threshold: string similarity from which an existing entity is a merge candidate
            (default 0.6); exact normalised matches merge without asking.
        max_candidates: candidates shown to the LM per new entity (default 5).
        (plus every `graph` store option)
    """

    def __init__(self, resources: Resources | None = None, **config: Any):
        super().__init__(resources, **config)
        if not self.resources.lm_available:
            raise LMRequiredError("store 'llm_graph' needs an LM to extract entities and facts; "
                                  "configure one or use store 'graph'")
        self.near_threshold = float(config.get("near_threshold", 0.6))
        self.max_candidates = int(config.get("max_candidates", 5))
        self.extractor = dspy.Predict(ExtractGraph)
        self.resolver = dspy.Predict(ResolveEntities)
        self.fallbacks = 0  # extractions / resolutions that ended on the LM-free path
        self.lm_requests = 0
        self._pending_facts: dict[str, list[tuple[str, str, str, str | None]]] = {}
        # namespace -> lookup key (word or 4-letter prefix) -> canonical entity names, and the names
        # themselves; derived from the graph.
        self._name_keys: dict[str, dict[str, set[str]]] = {}
        self._names: dict[str, set[str]] = {}

    # -- LM calls ---------------------------------------------------------------------------------
    def _predict(self, predictor: dspy.Predict, what: str, **inputs: Any) -> dspy.Prediction | None:
        """One call, one corrective retry on an unusable answer, then None (caller goes LM-free)."""
        feedback = ""
        self.lm_requests += 1
        for attempt in (1, 2):
            try:
                with self.resources.lm_context():
                    pred = predictor(**inputs, feedback=feedback)
                self._validate(pred)
                return pred
            except UNPARSABLE as exc:
                logger.warning("llm_graph %s: unusable LM answer (attempt %d/2): %s", what, attempt,
                               str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__)
                feedback = (f"Your previous answer could not be used ({type(exc).__name__}). Reply with one "
                            "JSON object holding exactly the output fields, with the types asked for.")
        self.fallbacks += 1
        logger.warning("llm_graph %s: falling back to the LM-free path", what)
        return None

    @staticmethod
    def _validate(pred: dspy.Prediction) -> None:
        for name in ("entities", "facts", "matches"):
            value = pred.get(name)
            if name in pred.keys() and not isinstance(value, list):
                raise TypeError(f"{name} is {type(value).__name__}, not a list")

    # -- extraction and deduplication -------------------------------------------------------------
    def _extract(self, namespace: str, items: list[MemoryItem]) -> list[list[str]]:
        out = []
        for it in items:
            pred = self._predict(self.extractor, "extraction", text=it.text, event_time=it.event_time or "unknown")
            if pred is None:
                raw, facts = extract_entities(it.text, max_terms=self.max_terms, texts=self.resources.texts), []
            else:
                raw = [e.name for e in pred.entities if e.name.strip()]
                facts = [(f.subject, f.predicate, f.object, f.valid_at) for f in pred.facts]
                # A fact may name an entity the extraction forgot: it is still an entity.
                raw += [n for f in facts for n in (f[0], f[2]) if n.strip()]
            canonical = self._dedupe(namespace, it, list(dict.fromkeys(raw)))
            self._pending_facts[it.id] = [
                (canonical[s], p.strip().lower(), canonical[o], t) for s, p, o, t in facts
                if s in canonical and o in canonical and canonical[s] != canonical[o] and p.strip()]
            out.append(list(dict.fromkeys(canonical.values())))
        return out

    def _dedupe(self, namespace: str, item: MemoryItem, names: list[str]) -> dict[str, str]:
        """Map each raw name to a canonical entity name, merging duplicates of known entities."""
        keys = self._name_keys.setdefault(namespace, {})
        known = self._names.setdefault(namespace, set())
        out: dict[str, str] = {}
        ask: dict[str, list[str]] = {}
        for raw in names:
            n = normalise(raw)
            if not n:
                continue
            if n in known or n in out.values():
                out[raw] = n
                continue
            near = self._near(keys, n)
            if near:
                ask[raw] = near
            else:
                out[raw] = n
        if ask:
            pred = self._predict(self.resolver, "entity resolution", new_entities=list(ask),
                                 candidates=ask, context=item.text)
            same = {m.name: m.same_as for m in pred.matches} if pred is not None else {}
            for raw, near in ask.items():
                pick = normalise(same.get(raw) or "")
                out[raw] = pick if pick in near else normalise(raw)
        for n in out.values():
            self._remember(namespace, n)
        return out

    def _remember(self, namespace: str, name: str) -> None:
        self._names.setdefault(namespace, set()).add(name)
        keys = self._name_keys.setdefault(namespace, {})
        for key in self._lookup_keys(name):
            keys.setdefault(key, set()).add(name)

    @staticmethod
    def _lookup_keys(name: str) -> set[str]:
        return {w for w in name.split() if len(w) > 2} | {f"prefix:{name[:4]}"}

    def _near(self, keys: dict[str, set[str]], name: str) -> list[str]:
        pool = set().union(*(keys.get(k, set()) for k in self._lookup_keys(name)))
        scored = sorted(((difflib.SequenceMatcher(None, name, other).ratio(), other) for other in pool),
                        reverse=True)
        return [o for r, o in scored if r >= self.near_threshold][:self.max_candidates]

    # -- facts ------------------------------------------------------------------------------------
    def _activate(self, namespace: str, items: list[MemoryItem], vectors: np.ndarray) -> None:
        try:
            super()._activate(namespace, items, vectors)
            g = self._graphs[namespace]
            for it in items:
                links = []
                for subj, pred, obj, valid_at in self._pending_facts.pop(it.id, []):
                    u, v = self._entity_id(subj), self._entity_id(obj)
                    for node, name in ((u, subj), (v, obj)):
                        if node not in g:
                            g.add_node(node, layer="entity", name=name)
                    key = f"{FACT}|{pred}|{it.id}"
                    g.add_edge(u, v, key=key, type=FACT, predicate=pred, valid_at=valid_at,
                               item_id=it.id, weight=1.0, active=True)
                    links.append([u, v, key])
                g.nodes[it.id]["facts"] = links
        finally:
            self._pending_facts.clear()

    def _drop_derived(self, g: nx.MultiDiGraph, node: str) -> None:
        super()._drop_derived(g, node)
        # New text, new facts: the old ones of this item go.
        for u, v, key in g.nodes[node].get("facts", []):
            if g.has_edge(u, v, key=key):
                g.remove_edge(u, v, key=key)
        g.nodes[node]["facts"] = []

    def _deactivate(self, namespace: str, item_ids: list[str]) -> None:
        super()._deactivate(namespace, item_ids)
        g = self._graphs.get(namespace)
        for iid in item_ids:
            if g is not None and iid in g:
                for u, v, key in g.nodes[iid].get("facts", []):
                    if g.has_edge(u, v, key=key):
                        g.edges[u, v, key]["active"] = False

    def facts(self, namespace: str = "default", entity: str | None = None) -> list[dict]:
        """Facts of active items, optionally only those whose subject or object is ``entity``."""
        g = self._graphs.get(namespace)
        if g is None:
            return []
        want = self._entity_id(entity) if entity is not None else None
        out = []
        for u, v, data in g.edges(data=True):
            if data.get("type") != FACT or not data.get("active", True):
                continue
            if want is not None and want not in (u, v):
                continue
            out.append({"subject": g.nodes[u]["name"], "predicate": data["predicate"],
                        "object": g.nodes[v]["name"], "valid_at": data.get("valid_at"),
                        "item_id": data["item_id"]})
        return out

    def _load_extra(self, state: dict, directory) -> None:
        super()._load_extra(state, directory)
        self._name_keys, self._names = {}, {}
        for ns, g in self._graphs.items():
            for _, data in g.nodes(data=True):
                if data.get("layer") == "entity":
                    self._remember(ns, data["name"])

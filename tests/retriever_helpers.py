"""Helpers shared by the retriever tests: items by hand, a filled json store, DummyLM resources and a
minimal store implementing the graph store's contract."""
from __future__ import annotations

import dspy
from dspy.utils.dummies import DummyLM

from memarch.modules.retrievers.cbr_rerank import CBRRerankRetriever
from memarch.modules.retrievers.contrastive import ContrastiveRetriever
from memarch.modules.retrievers.hybrid import HybridRetriever
from memarch.modules.retrievers.mmr import MMRRetriever
from memarch.modules.stores.json_store import JsonStore
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.resources import Resources

# Filler keeps BM25 idfs meaningful: in a 4-document corpus a term in 2 documents has idf 0.
FILLER = ["the garden needs water every morning", "a train leaves the station at noon",
          "paint the fence with a blue brush", "the library closes early on sunday",
          "bake bread with flour yeast and salt", "the cat sleeps on the warm sofa",
          "music lessons start in september", "clean the windows with vinegar"]


def item(text, ep, outcome="unknown", task=None, ns="default", kind="tip"):
    return MemoryItem(text, kind, episode_id=ep, outcome=outcome, namespace=ns,
                      fields={"task": task} if task else {})


def fill(s):
    s.add([item(t, f"filler{i}") for i, t in enumerate(FILLER)])
    s.add([
        item("take the milk from the fridge then close the fridge", "ep-self", "success", "make breakfast"),
        item("open the fridge before taking the milk", "ep1", "success", "make breakfast with milk"),
        item("the fridge door sticks; pull it hard", "ep2", "failure", "get milk from the fridge"),
        item("turn on the stove before cooking eggs", "ep3", "success", "cook eggs"),
        item("eggs burn if the stove is too hot", "ep4", "failure", "cook eggs"),
        item("milk fridge secret from another user", "ep5", "success", ns="other"),
    ])
    return s


def filled_store(resources):
    """A json store holding the filler items (the `store` fixture of the retriever tests)."""
    return fill(JsonStore(resources))


def lm_resources(hash_resources, answers):
    return Resources(embedder=hash_resources.embedder, cache_dir=hash_resources.cache_dir,
                     lm=DummyLM(answers, adapter=dspy.JSONAdapter()))


class FakeGraphStore(JsonStore):
    """The graph store contract the retriever relies on: ``neighbors`` over weighted typed edges."""

    def __init__(self, resources=None, **config):
        super().__init__(resources, **config)
        self.edges: dict[str, list[tuple[str, str, float]]] = {}

    def link(self, a: str, b: str, edge_type: str, weight: float = 1.0) -> None:
        self.edges.setdefault(a, []).append((b, edge_type, weight))
        self.edges.setdefault(b, []).append((a, edge_type, weight))

    def neighbors(self, item_id, namespace="default", edge_types=None):
        return [e for e in self.edges.get(item_id, []) if edge_types is None or e[1] in edge_types]


ALL_LM_FREE = [HybridRetriever, ContrastiveRetriever, CBRRerankRetriever, MMRRetriever]

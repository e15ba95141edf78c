"""Helpers shared by the store tests: sample items, a DummyLM for llm_graph, a store factory, snapshots."""
from __future__ import annotations

import numpy as np

import dspy
from dspy.utils import DummyLM

from memarch.modules.stores import Store
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.registry import REGISTRY
from memarch.pipeline.resources import Resources


STORES = ["json", "vector", "hybrid", "graph", "llm_graph"]
TEXTS = [
    "Open the fridge before taking the milk",
    "Caroline moved to Paris in May 2023",
    "Search the Wikipedia page of John Smith first",
    "The Red Key opens the cellar door",
    "Check the oven temperature before cooking the pizza",
    "Melanie paints landscapes every Sunday",
]


def extraction(text: str) -> dict:
    """A well-formed ExtractGraph answer for ``text``: its capitalised words, one fact between the first two."""
    names = [w.strip(".,") for w in text.split() if w[:1].isupper()][:3] or [text.split()[-1]]
    facts = [{"subject": names[0], "predicate": "relates to", "object": names[1], "valid_at": None}] if len(names) > 1 else []
    return {"entities": [{"name": n, "type": "thing"} for n in names], "facts": facts}


def dummy_lm(texts) -> DummyLM:
    return DummyLM({t: extraction(t) for t in texts}, adapter=dspy.JSONAdapter())


def store_factory(hash_resources, tmp_path):
    """``make(name)`` -> an empty store of that name (llm_graph gets a DummyLM that knows TEXTS)."""
    def build(name: str, texts=None, **config) -> Store:
        res = hash_resources
        if name == "llm_graph":
            res = Resources(embedder=hash_resources.embedder, cache_dir=tmp_path,
                            lm=dummy_lm(list(texts or []) + [t + " (bob)" for t in TEXTS] + TEXTS))
        return REGISTRY.get("store", name).cls(res, **config)
    return build


def items_for(namespace: str = "default", suffix: str = "") -> list[MemoryItem]:
    out = []
    for i, text in enumerate(TEXTS):
        it = MemoryItem(text=text + suffix, kind="tip" if i % 2 else "insight", episode_id=f"ep{i // 2}",
                        source_ids=[f"s{i}", f"s{i + 1}"], outcome=("success", "failure", "unknown")[i % 3],
                        event_time=f"2023-05-0{i + 1}", namespace=namespace, key=f"k{i}",
                        fields={"task": f"task {i // 2}", "rank": i})
        it.log("created", "encoder:tip", "from test", at=f"t{i}")
        out.append(it)
    return out


def snapshot(store: Store) -> dict:
    return {ns: sorted((it.to_dict() for it in store.list(ns, include_deleted=True)), key=lambda d: d["id"])
            for ns in store.namespaces()}


def unit_rows(n: int, dim: int = 384, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)

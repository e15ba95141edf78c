"""Helpers shared by the manager tests: items by hand, one write through a manager, DummyLM resources."""
from __future__ import annotations

import dspy
from dspy.utils.dummies import DummyLM

from memarch.modules.managers.graph_consolidate import GraphConsolidateManager
from memarch.modules.managers.json_full import JsonFullManager
from memarch.modules.managers.lightweight import LightweightManager
from memarch.modules.managers.tool_manager import ToolManager
from memarch.pipeline.episodes import Query
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.resources import Resources
from memarch.pipeline.retrieval import Retrieval, ScoredItem

MANAGERS = [LightweightManager, JsonFullManager, ToolManager, GraphConsolidateManager]


def fact(text, key=None, when=None, ep="e1", outcome="unknown", kind="fact", ns="default"):
    return MemoryItem(text=text, kind=kind, key=key, event_time=when, episode_id=ep, outcome=outcome, namespace=ns)


def write(manager, store, items, episode=None):
    store.add(manager.on_insert(items, store))
    if episode is not None:
        manager.after_episode(episode, store)


def actions(item):
    return [e.action for e in item.lineage]


def with_lm(hash_resources, answers):
    lm = DummyLM(answers, adapter=dspy.JSONAdapter())
    return Resources(embedder=hash_resources.embedder, cache_dir=hash_resources.cache_dir, lm=lm), lm


def retrieval_of(items, text="find the mug"):
    return Retrieval(query=Query(text=text, id="q1"), items=[ScoredItem(it, 1.0) for it in items])

"""Stores, part two: graph edges and entities, llm_graph through DSPy's DummyLM, and the store
benchmark on a small run."""
from __future__ import annotations

import json
import logging

import dspy
import networkx as nx
import pytest
from dspy.utils import DummyLM

from memarch.errors import LMRequiredError
from memarch.modules.stores._entities import extract_entities
from memarch.modules.stores.graph import GraphStore
from memarch.modules.stores.llm_graph import LLMGraphStore
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.resources import Resources

from store_helpers import items_for, snapshot, store_factory, unit_rows


@pytest.fixture
def make(hash_resources, tmp_path):
    return store_factory(hash_resources, tmp_path)


# -- graph -------------------------------------------------------------------------------------------------
def test_graph_typed_edges(hash_resources):
    store = GraphStore(hash_resources, similar_threshold=0.5, conflict_threshold=0.8, reinforce_threshold=0.8)
    base = "open the fridge then take the milk and close the fridge door"
    a = MemoryItem(text=base, kind="tip", episode_id="e1", outcome="success", fields={"task": "make tea"})
    b = MemoryItem(text=base + " again", kind="tip", episode_id="e1", outcome="failure")
    c = MemoryItem(text=base + " quickly", kind="tip", episode_id="e2", outcome="success")
    d = MemoryItem(text="Caroline lives in Paris", kind="fact", episode_id="e3", key="caroline|city")
    e = MemoryItem(text="Caroline lives in Berlin", kind="fact", episode_id="e4", key="caroline|city")
    store.add([a, b, c])
    store.add([d])
    store.add([e])
    types = lambda x, y: {t for n, t, _ in store.neighbors(x) if n == y}
    assert {"DEPENDS", "SIMILAR", "CONFLICTS", "COOCCURS"} <= types(a.id, b.id)
    assert {"SIMILAR", "REINFORCES"} <= types(a.id, c.id) and "CONFLICTS" not in types(a.id, c.id)
    assert {"CONFLICTS", "COOCCURS"} <= types(d.id, e.id)
    assert "caroline" in store.entities(d.id) and set(store.items_for_entity("Caroline")) == {d.id, e.id}
    g = store.graph()
    assert g.nodes["query:make tea"]["layer"] == "query" and g.has_edge("query:make tea", a.id, key="SOURCE")
    assert g.nodes["entity:paris"]["layer"] == "entity"
    store.delete(d.id, status="superseded", related=[e.id], reason="moved")
    assert g.has_edge(e.id, d.id, key="SUPERSEDES")
    assert store.neighbors(e.id) == [] and store.items_for_entity("caroline") == [e.id]
    # usage updates keep edges (and manager-adjusted weights) untouched
    w = store.adjust_edge(a.id, c.id, "SIMILAR", 10.0)
    assert w == 5.0 and store.adjust_edge(a.id, c.id, "SIMILAR", -7.0) == 0.0
    store.add_edge(a.id, c.id, "SIMILAR", 2.5)
    used = a.copy()
    used.usage.retrieved = 3
    store.update(used)
    assert ("SIMILAR" in types(a.id, c.id)) and dict(((n, t), w) for n, t, w in store.neighbors(a.id))[(c.id, "SIMILAR")] == 2.5
    assert store.adjust_edge(a.id, e.id, "GENERALIZES", 0.4) == pytest.approx(0.4)
    with pytest.raises(KeyError):
        store.add_edge(a.id, "no-such-item", "SIMILAR")
    with pytest.raises(ValueError):
        store.add_edge(a.id, b.id, "MENTIONS")
    only = store.neighbors(a.id, edge_types=["DEPENDS"])
    assert only == [(b.id, "DEPENDS", 1.0)]


def test_graph_update_refreshes_key_without_rebuilding_edges(hash_resources):
    store = GraphStore(hash_resources)
    a = MemoryItem(text="Caroline lives in Paris", kind="fact", key="caroline|city")
    b = MemoryItem(text="Caroline lives in Rome", kind="fact", key="melanie|city")
    store.add([a, b])
    assert "CONFLICTS" not in {t for _, t, _ in store.neighbors(a.id)}
    store.add_edge(a.id, b.id, "COOCCURS", 4.0)
    rekeyed = b.copy()
    rekeyed.key = "caroline|city"
    store.update(rekeyed)  # same text: edges stay, the key index follows the new key
    assert (b.id, "COOCCURS", 4.0) in store.neighbors(a.id)
    c = MemoryItem(text="Caroline lives in Oslo", kind="fact", key="caroline|city")
    store.add([c])
    assert {a.id, b.id} <= {n for n, t, _ in store.neighbors(c.id) if t == "CONFLICTS"}


@pytest.mark.parametrize("name", ["vector", "hybrid", "graph"])
def test_state_without_index_files_reloads_identically(make, name, tmp_path):
    """A MemoryProgram keeps only store.json: vectors come back from the embedder."""
    store = make(name)
    store.add(items_for())
    if isinstance(store, GraphStore):
        a, b = [it.id for it in store.list()[:2]]
        store.adjust_edge(a, b, "SIMILAR", 3.25)
    store.save(tmp_path / "s")
    state = json.loads((tmp_path / "s" / "store.json").read_text())
    fresh = type(store)(store.resources, **store.config)
    fresh.load_state(state, tmp_path / "elsewhere")
    assert snapshot(fresh) == snapshot(store)
    q = store.resources.embedder.embed_one("oven pizza temperature")
    assert fresh.search(q, 4) == store.search(q, 4)
    if isinstance(store, GraphStore):  # learned edge weights survive; nothing is rebuilt
        assert nx.node_link_data(fresh.graph(), edges="edges") == nx.node_link_data(store.graph(), edges="edges")
        assert (b, "SIMILAR", 3.25) in fresh.neighbors(a)


def test_graph_similar_edges_are_capped_by_knn(hash_resources):
    store = GraphStore(hash_resources, similar_k=3, similar_threshold=0.0, cooccur_cap=2)
    items = [MemoryItem(text=f"fridge milk tea step {i}", kind="tip") for i in range(40)]
    store.add(items)
    g = store.graph()
    sim = [1 for _, _, k in g.edges(keys=True) if k == "SIMILAR"]
    co = [1 for _, _, k in g.edges(keys=True) if k == "COOCCURS"]
    assert 0 < len(sim) <= 40 * 3 and 0 < len(co) <= 40 * 2 * 3


def test_graph_on_ivf_index_keeps_building_edges(hash_resources, tmp_path):
    store = GraphStore(hash_resources, ivf_min_items=200, knn_nprobe=4, similar_threshold=0.0)
    vecs = unit_rows(400, seed=3)
    items = [MemoryItem(text=f"step {i} of the Cellar task", kind="tip", episode_id=f"e{i // 4}") for i in range(400)]
    store.add(items[:300], vectors=vecs[:300])
    assert store._indexes["default"].is_ivf
    store.add(items[300:], vectors=vecs[300:])
    assert any(t == "SIMILAR" for _, t, _ in store.neighbors(items[350].id))
    assert (items[350].id, "DEPENDS", 1.0) in store.neighbors(items[351].id)
    store.save(tmp_path / "g")
    loaded = GraphStore.load(tmp_path / "g", hash_resources)
    assert loaded.neighbors(items[350].id) == store.neighbors(items[350].id)
    assert loaded.search(vecs[10], 3) == store.search(vecs[10], 3)


def test_heuristic_entities():
    ents = extract_entities('Caroline moved to Paris on 8 May 2023, paid 300 euros and said "never again".')
    assert {"caroline", "paris", "8 may 2023", "300", "never again"} <= set(ents)
    assert "use" not in extract_entities("Use the Red Key on the door.") and "red key" in extract_entities("Use the Red Key.")


# -- llm_graph ----------------------------------------------------------------------------------------------
def lm_store(hash_resources, tmp_path, answers) -> LLMGraphStore:
    res = Resources(embedder=hash_resources.embedder, cache_dir=tmp_path,
                    lm=DummyLM(answers, adapter=dspy.JSONAdapter()))
    return LLMGraphStore(res)


def test_llm_graph_extracts_facts_and_dedups_entities(hash_resources, tmp_path):
    store = lm_store(hash_resources, tmp_path, [
        {"entities": [{"name": "Caroline", "type": "person"}, {"name": "Paris", "type": "place"}],
         "facts": [{"subject": "Caroline", "predicate": "Moved to", "object": "Paris", "valid_at": "May 2023"}]},
        {"entities": [{"name": "the Caroline", "type": "person"}, {"name": "Carolyn", "type": "person"},
                      {"name": "Berlin", "type": "place"}],
         "facts": [{"subject": "Carolyn", "predicate": "visited", "object": "Berlin", "valid_at": None}]},
        {"matches": [{"name": "Carolyn", "same_as": "caroline"}]},
        {"entities": [{"name": "CAROLINE", "type": "person"}, {"name": "Oslo", "type": "place"}],
         "facts": [{"subject": "CAROLINE", "predicate": "flew to", "object": "Oslo", "valid_at": "2024"}]},
    ])
    a = MemoryItem(text="Caroline moved to Paris in May 2023", kind="fact")
    b = MemoryItem(text="Carolyn visited Berlin", kind="fact")
    store.add([a])
    store.add([b])
    assert store.entities(b.id) == ["caroline", "berlin"]  # exact match + LM-confirmed near match merged
    assert set(store.items_for_entity("Caroline")) == {a.id, b.id}
    facts = store.facts(entity="caroline")
    assert {(f["subject"], f["predicate"], f["object"], f["valid_at"], f["item_id"]) for f in facts} == {
        ("caroline", "moved to", "paris", "May 2023", a.id), ("caroline", "visited", "berlin", None, b.id)}
    store.delete(b.id)
    assert [f["item_id"] for f in store.facts()] == [a.id]
    store.save(tmp_path / "kg")
    loaded = LLMGraphStore.load(tmp_path / "kg", store.resources)
    assert loaded.facts() == store.facts()
    c = MemoryItem(text="CAROLINE flew to Oslo", kind="fact")
    loaded.add([c])  # the reloaded store still knows its entities: an exact match merges
    assert loaded.entities(c.id) == ["caroline", "oslo"]
    assert set(loaded.items_for_entity("caroline")) == {a.id, c.id}


def test_llm_graph_corrective_retry_then_heuristic(hash_resources, tmp_path, caplog):
    good = {"entities": [{"name": "Melanie", "type": "person"}], "facts": []}
    store = lm_store(hash_resources, tmp_path, [{"oops": "no fields"}, good, {"bad": 1}, {"bad": 2}])
    first = MemoryItem(text="Melanie paints on Sunday", kind="fact")
    second = MemoryItem(text="Oscar adopted a dog in Lisbon", kind="fact")
    with caplog.at_level(logging.WARNING):
        store.add([first])
        assert store.entities(first.id) == ["melanie"]  # the retry's answer
        store.add([second])
    assert {"oscar", "lisbon"} <= set(store.entities(second.id))  # heuristic path after two failures
    assert "falling back to the LM-free path" in caplog.text


def test_llm_graph_without_lm_fails_clearly(hash_resources):
    with pytest.raises(LMRequiredError, match="needs an LM"):
        LLMGraphStore(hash_resources)


def test_store_benchmark_runs_small(capsys):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_stores.py"
    spec = importlib.util.spec_from_file_location("bench_stores", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = bench.main(["--sizes", "300", "--queries", "5"])
    out = capsys.readouterr().out
    assert rows and all(r["write_items_s"] > 0 and r["p95_ms"] >= r["p50_ms"] for r in rows)
    assert "vector" in out and "p95" in out

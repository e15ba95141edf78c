"""Stores: CRUD, persistence round trips with provenance intact, namespace isolation, FAISS paths,
structured filters, graph edges and the LLM graph through DSPy's DummyLM."""
from __future__ import annotations

import json
import logging

import dspy
import networkx as nx
import numpy as np
import pytest
from dspy.utils import DummyLM

from memarch.errors import LMRequiredError
from memarch.modules.stores import Store, matches
from memarch.modules.stores._entities import extract_entities
from memarch.modules.stores.graph import GraphStore
from memarch.modules.stores.hybrid import HybridStore
from memarch.modules.stores.llm_graph import LLMGraphStore
from memarch.modules.stores.vector import VectorStore
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.registry import REGISTRY
from memarch.pipeline.resources import Resources
from memarch.pipeline.space import ArchitectureSpace

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


@pytest.fixture
def make(hash_resources, tmp_path):
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


# -- registry ---------------------------------------------------------------------------------------
def test_registered_in_rank_order_with_capabilities():
    assert REGISTRY.names("store")[:5] == STORES
    assert "graph" in REGISTRY.get("store", "graph").provides
    assert "graph" in REGISTRY.get("store", "llm_graph").provides
    assert REGISTRY.get("store", "llm_graph").needs_lm and not REGISTRY.get("store", "graph").needs_lm
    free = ArchitectureSpace("experience", lm_available=False)
    assert "llm_graph" not in free.stores and {"vector", "hybrid", "graph"} <= set(free.stores)


# -- every store --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", STORES)
def test_crud_and_tombstones(make, name):
    store = make(name)
    items = items_for()
    assert store.add(items) == [it.id for it in items]
    assert store.count() == len(items) and store.get(items[0].id).text == TEXTS[0]
    v = store.version()
    changed = items[1].copy()
    changed.usage.retrieved = 7
    store.update(changed)
    assert store.get(items[1].id).usage.retrieved == 7 and store.version() > v
    store.delete(items[2].id, reason="stale", actor="manager:lightweight")
    assert store.get(items[2].id) is None and store.count() == len(items) - 1
    tomb = store.get(items[2].id, include_deleted=True)
    assert tomb.status == "deleted" and tomb.lineage[-1].reason == "stale"
    assert items[2].id not in [it.id for it, _ in store.search(store.vectors([items[2]])[0], 10)]
    with pytest.raises(KeyError):
        store.update(MemoryItem(text="never stored", kind="tip"))


@pytest.mark.parametrize("name", STORES)
def test_round_trip_keeps_provenance_and_search(make, name, tmp_path):
    store = make(name)
    store.add(items_for("alice") + items_for("bob", " (bob)"))
    alice = store.list("alice")
    store.delete(alice[0].id, "alice", reason="wrong", actor="manager:json_full", at="t9")
    store.delete(alice[1].id, "alice", status="superseded", related=[alice[3].id], reason="newer")
    boosted = alice[2].copy()
    boosted.usage.helped_success, boosted.usage.strength = 3, 1.7
    boosted.log("boosted", "manager:lightweight", at="t10", delta=0.7)
    store.update(boosted)
    store.save(tmp_path / "bank")

    loaded = type(store).load(tmp_path / "bank", store.resources)
    assert snapshot(loaded) == snapshot(store)
    generic = Store.load(tmp_path / "bank", store.resources)  # dispatches on the saved store name
    assert type(generic) is type(store) and snapshot(generic) == snapshot(store)
    assert loaded.get(alice[2].id, "alice").lineage[-1].data == {"delta": 0.7}
    assert loaded.get(alice[1].id, "alice", include_deleted=True).status == "superseded"
    for ns in ("alice", "bob"):
        for probe in store.list(ns):
            q = store.vectors([probe])[0]
            before = [(it.id, round(s, 5)) for it, s in store.search(q, 4, ns)]
            assert [(it.id, round(s, 5)) for it, s in loaded.search(q, 4, ns)] == before
    # load_state on a fresh instance gives the same store
    fresh = type(store)(store.resources, **store.config)
    fresh.load_state(json.loads((tmp_path / "bank" / "store.json").read_text()), tmp_path / "bank")
    assert snapshot(fresh) == snapshot(store)
    if isinstance(store, GraphStore):
        for ns in ("alice", "bob"):
            assert nx.utils.graphs_equal(loaded.graph(ns), store.graph(ns))
            assert [sorted(d.items()) for *_, d in loaded.graph(ns).edges(keys=True, data=True)] == \
                   [sorted(d.items()) for *_, d in store.graph(ns).edges(keys=True, data=True)]


@pytest.mark.parametrize("name", STORES)
def test_namespaces_never_leak(make, name):
    store = make(name)
    store.add(items_for("alice") + items_for("bob", " (bob)"))
    alice_ids = {it.id for it in store.list("alice")}
    bob_ids = {it.id for it in store.list("bob")}
    assert alice_ids and bob_ids and not alice_ids & bob_ids
    assert store.namespaces() == ["alice", "bob"] and store.count("default") == 0
    for it in store.list("bob"):
        hits = store.search(store.vectors([it])[0], 50, "alice")
        assert {h.id for h, _ in hits} <= alice_ids
    if isinstance(store, GraphStore):
        for iid in bob_ids:
            assert {n for n, _, _ in store.neighbors(iid, "bob")} <= bob_ids
            assert store.neighbors(iid, "alice") == []
        for ent in {e for iid in alice_ids for e in store.entities(iid, "alice")}:
            assert set(store.items_for_entity(ent, "alice")) <= alice_ids
        with pytest.raises(KeyError):
            store.add_edge(next(iter(alice_ids)), next(iter(bob_ids)), "SIMILAR", namespace="alice")


# -- vector / hybrid ------------------------------------------------------------------------------------
def unit_rows(n: int, dim: int = 384, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("cls", [VectorStore, HybridStore])
def test_precomputed_vectors_survive_update_delete_and_reload(hash_resources, tmp_path, cls):
    store = cls(hash_resources)
    items = [MemoryItem(text=f"item {i}", kind="tip", outcome=("success", "failure")[i % 2]) for i in range(300)]
    vecs = unit_rows(300)
    store.add(items, vectors=vecs)
    top, score = store.search(vecs[5], 1)[0]
    assert top.id == items[5].id and score == pytest.approx(1.0, abs=1e-5)
    again = items[5].copy()
    again.usage.retrieved = 2
    store.update(again)  # same text: the precomputed vector stays
    assert store.search(vecs[5], 1)[0][1] == pytest.approx(1.0, abs=1e-5)
    np.testing.assert_allclose(store.vectors([items[7]])[0], vecs[7], atol=1e-6)
    store.delete(items[5].id)
    assert items[5].id not in {it.id for it, _ in store.search(vecs[5], 10)}
    got = store.search(vecs[6], 5, where={"outcome": "failure"}, exclude=lambda it: it.id == items[7].id)
    assert len(got) == 5 and all(it.outcome == "failure" and it.id != items[7].id for it, _ in got)
    assert got == sorted(got, key=lambda p: -p[1])
    store.save(tmp_path / "a")
    store.save(tmp_path / "a")  # the second save removes the first save's index file
    assert len(list((tmp_path / "a").glob("*.faiss"))) == 1
    loaded = cls.load(tmp_path / "a", hash_resources)
    for j in (0, 6, 299):
        assert loaded.search(vecs[j], 5) == store.search(vecs[j], 5)


@pytest.mark.parametrize("name", ["vector", "hybrid", "graph"])
def test_in_place_edits_of_stored_items_reach_the_index(make, name):
    store = make(name)
    items = items_for()
    store.add(items)
    stored = store.get(items[0].id)
    stored.text = "Bake bread in the Cellar oven"  # edited in place, then update()
    store.update(stored)
    q = store.resources.embedder.embed_one("Bake bread in the Cellar oven")
    top, score = store.search(q, 1)[0]
    assert top.id == items[0].id and score == pytest.approx(1.0, abs=1e-5)
    gone = store.get(items[1].id)
    gone.status = "superseded"
    gone.log("superseded_by", "manager:test", related=[items[2].id])
    store.update(gone)
    assert items[1].id not in {it.id for it, _ in store.search(store.vectors([gone])[0], 10)}
    if isinstance(store, GraphStore):
        assert store.graph().has_edge(items[2].id, items[1].id, key="SUPERSEDES")
        assert "bread" in store.entities(items[0].id)


def test_ivf_index_switches_when_large_and_reloads(hash_resources, tmp_path):
    store = VectorStore(hash_resources, index="ivf", ivf_min_items=400, nprobe=64)
    items = [MemoryItem(text=f"doc {i}", kind="tip") for i in range(600)]
    vecs = unit_rows(600, seed=1)
    store.add(items[:300], vectors=vecs[:300])
    assert not store._indexes["default"].is_ivf
    store.add(items[300:], vectors=vecs[300:])
    assert store._indexes["default"].is_ivf
    assert store.search(vecs[450], 1)[0][0].id == items[450].id
    store.delete(items[450].id)
    assert store.count() == 599 and items[450].id not in {i.id for i, _ in store.search(vecs[450], 5)}
    store.save(tmp_path / "ivf")
    loaded = VectorStore.load(tmp_path / "ivf", hash_resources)
    assert loaded._indexes["default"].is_ivf
    assert loaded.search(vecs[10], 5) == store.search(vecs[10], 5)
    with pytest.raises(ValueError):
        VectorStore(hash_resources, index="hnsw")


def test_unreadable_index_is_rebuilt_from_records(hash_resources, tmp_path, caplog):
    store = VectorStore(hash_resources)
    store.add(items_for())
    store.save(tmp_path / "b")
    for f in (tmp_path / "b").glob("*.faiss"):
        f.write_bytes(b"not an index")
    with caplog.at_level(logging.WARNING):
        loaded = VectorStore.load(tmp_path / "b", hash_resources)
    assert "re-embedding" in caplog.text
    q = hash_resources.embedder.embed_one("fridge milk")
    assert [it.id for it, _ in loaded.search(q, 3)] == [it.id for it, _ in store.search(q, 3)]


def test_hybrid_filters_match_brute_force(hash_resources):
    store = HybridStore(hash_resources, prefilter_max=50)
    items = [MemoryItem(text=f"note {i} about {'fridge' if i % 3 else 'oven'}", kind=("tip", "insight", "workflow")[i % 3],
                        outcome=("success", "failure")[i % 2], episode_id=f"e{i % 40}", fields={"task": f"t{i % 7}"})
             for i in range(400)]
    vecs = unit_rows(400, seed=2)
    store.add(items, vectors=vecs)
    store.delete(items[3].id)
    wheres = [{"kind": "tip"}, {"kind": ["tip", "workflow"], "outcome": "failure"}, {"episode_id": "e5"},
              {"task": "t3", "outcome": "success"}, {"rank": None}, {"kind": lambda k: k != "tip"}]
    for where in wheres:
        want = [it for it in store.list() if matches(it, where)]
        assert store.filter(where) == want
        brute = sorted(((float(vecs[int(it.text.split()[1])] @ vecs[0]), it.id) for it in want), reverse=True)[:5]
        got = store.search(vecs[0], 5, where=where)
        assert [it.id for it, _ in got] == [i for _, i in brute]
    moved = items[4].copy()
    moved.kind, moved.fields = "shortcut", {"task": "t99"}
    store.update(moved)
    assert store.filter({"kind": "shortcut"}) == [moved] and store.filter({"task": "t99"}) == [moved]
    assert moved.id not in {it.id for it in store.filter({"kind": "tip"})}
    e3 = store.filter({"episode_id": "e3"})
    assert len(e3) == 9 and items[3].id not in {it.id for it in e3}  # the tombstone left the postings


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

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_stores.py"
    spec = importlib.util.spec_from_file_location("bench_stores", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = bench.main(["--sizes", "300", "--queries", "5"])
    out = capsys.readouterr().out
    assert rows and all(r["write_items_s"] > 0 and r["p95_ms"] >= r["p50_ms"] for r in rows)
    assert "vector" in out and "p95" in out

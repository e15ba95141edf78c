"""Stores, part one: registration, CRUD and tombstones, persistence round trips with provenance
intact, namespace isolation, FAISS paths and structured filters."""
from __future__ import annotations

import json
import logging

import networkx as nx
import numpy as np
import pytest

from memarch.modules.stores import Store, matches
from memarch.modules.stores.graph import GraphStore
from memarch.modules.stores.hybrid import HybridStore
from memarch.modules.stores.vector import VectorStore
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.registry import REGISTRY
from memarch.pipeline.space import ArchitectureSpace

from store_helpers import STORES, TEXTS, items_for, snapshot, store_factory, unit_rows


@pytest.fixture
def make(hash_resources, tmp_path):
    return store_factory(hash_resources, tmp_path)


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

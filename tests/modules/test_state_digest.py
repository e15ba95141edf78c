"""`Store.state_digest`: each store class's observable state of one namespace as plain values —
equal for equal memories, different when records, the dense index, the posting lists or the graph
differ, and None for a class whose own state it does not declare it covers."""
from __future__ import annotations

import marshal

import pytest

from memarch.modules.stores import Store
from memarch.modules.stores._record_digests import record_state
from memarch.modules.stores.files import FilesStore
from memarch.modules.stores.graph import GraphStore
from memarch.modules.stores.hybrid import HybridStore
from memarch.modules.stores.json_store import JsonStore
from memarch.modules.stores.vector import VectorStore

from store_helpers import items_for, store_factory, unit_rows

PARTS = {"json": ["records"], "vector": ["records", "dense"], "hybrid": ["records", "dense", "postings"],
         "graph": ["records", "dense", "graph"]}


@pytest.fixture
def make(hash_resources, tmp_path):
    return store_factory(hash_resources, tmp_path)


def _filled(make, name: str, **config) -> Store:
    store = make(name, **config)
    store.add(items_for("a") + items_for("b", " (b)"))
    return store


def _bytes(store: Store, namespace: str = "a", **kw) -> bytes:
    parts = store.state_digest(namespace, **kw)
    assert parts is not None
    return b"".join(marshal.dumps(part, 2) for part in parts.values())  # as the landscape digest hashes them


@pytest.mark.parametrize("name", list(PARTS))
def test_equal_memories_give_equal_plain_parts(make, name):
    one, two = _filled(make, name), _filled(make, name)
    assert list(one.state_digest("a")) == PARTS[name]
    assert _bytes(one) == _bytes(two)
    assert _bytes(one, "a") != _bytes(one, "b")
    assert _bytes(make(name)) == _bytes(make(name)) != _bytes(one)  # an empty namespace has parts too


@pytest.mark.parametrize("name", list(PARTS))
def test_a_change_to_a_record_changes_its_namespace_only(make, name):
    store = _filled(make, name)
    before, other = _bytes(store), _bytes(store, "b")
    changed = store.list("a")[1].copy()
    changed.usage.strength = 2.0
    store.update(changed)
    after_usage = _bytes(store)
    assert after_usage != before and _bytes(store, "b") == other
    store.delete(store.list("a")[0].id, "a", reason="stale", actor="manager:lightweight")
    assert _bytes(store) not in (before, after_usage) and _bytes(store, "b") == other


@pytest.mark.parametrize("name", list(PARTS))
def test_actors_rename_lineage_only(make, name):
    def written_by(actor: str) -> Store:
        store = make(name)
        items = items_for("a")
        for it in items:
            it.log("admitted", actor)
        store.add(items)
        return store

    lw, jf = written_by("manager:lightweight"), written_by("manager:json_full")
    assert _bytes(lw) != _bytes(jf)
    assert (_bytes(lw, actors={"manager:lightweight": "manager:*"})
            == _bytes(jf, actors={"manager:json_full": "manager:*"}))
    assert record_state(lw.list("a")[0], {"manager:lightweight": "manager:*"})[-1][-1][1] == "manager:*"
    assert lw.list("a")[0].lineage[-1].actor == "manager:lightweight"  # the records themselves unchanged


@pytest.mark.parametrize("name", ["vector", "hybrid", "graph"])
def test_the_dense_index_is_part_of_it(make, name):
    """Equal records, other vectors (precomputed ones): the dense part tells them apart."""
    items = items_for("a")
    one, two = make(name), make(name)
    one.add([it.copy() for it in items], vectors=unit_rows(len(items), seed=1))
    two.add([it.copy() for it in items], vectors=unit_rows(len(items), seed=2))
    p1, p2 = one.state_digest("a"), two.state_digest("a")
    assert p1["records"] == p2["records"] and p1["dense"] != p2["dense"]
    assert _bytes(one) != _bytes(two)


def test_the_posting_lists_are_part_of_it(make):
    """Equal records and vectors, other indexed fields: the posting lists differ."""
    one, two = _filled(make, "hybrid"), _filled(make, "hybrid", indexed_fields=("kind",))
    p1, p2 = one.state_digest("a"), two.state_digest("a")
    assert p1["records"] == p2["records"] and p1["dense"] == p2["dense"] and p1["postings"] != p2["postings"]


def test_the_graph_is_part_of_it(make):
    store, same = _filled(make, "graph"), _filled(make, "graph")
    u, v = [it.id for it in store.list("a")[:2]]
    store.adjust_edge(u, v, "DEPENDS", 0.5, namespace="a")
    p1, p2 = store.state_digest("a"), same.state_digest("a")
    assert p1["records"] == p2["records"] and p1["graph"] != p2["graph"]
    same.adjust_edge(u, v, "DEPENDS", 0.5, namespace="a")
    assert _bytes(store) == _bytes(same)
    nodes, adjacency = store.state_digest("a")["graph"]
    assert nodes[u]["layer"] == "content" and adjacency[u][v]["DEPENDS"]["weight"] == pytest.approx(1.5)


def test_every_graph_change_changes_it(make):
    """The graph part is the graph's nodes and adjacency: a new edge, a new weight, a new node
    attribute each change it."""
    store = _filled(make, "graph")
    u, v = [it.id for it in store.list("a")[2:4]]
    seen = {_bytes(store)}
    store.add_edge(u, v, "CUSTOM", 1.0, namespace="a")
    seen.add(_bytes(store))
    store.add_edge(u, v, "CUSTOM", 2.0, namespace="a")
    seen.add(_bytes(store))
    store.graph("a").nodes[u]["note"] = "x"
    seen.add(_bytes(store))
    assert len(seen) == 4


@pytest.mark.parametrize("cls", [Store, JsonStore, VectorStore, HybridStore, GraphStore])
def test_a_subclass_that_does_not_declare_its_state_gets_none(hash_resources, cls):
    class OwnState(cls):  # may keep state of its own that the parent's parts do not cover
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.extra: dict = {}

    store = OwnState(hash_resources)
    store.add(items_for("a"))
    assert store.state_digest("a") is None
    assert cls(hash_resources).state_digest("a") is not None

    class Declared(OwnState):  # says its parts (the parent's) cover all its state
        _digest_covers_state = True

    assert list(Declared(hash_resources).state_digest("a")) == list(cls(hash_resources).state_digest("a"))


def test_stores_with_state_of_their_own_get_none(make, hash_resources):
    assert FilesStore(hash_resources).state_digest("a") is None
    llm_graph = make("llm_graph")
    llm_graph.add(items_for("a"))
    assert llm_graph.state_digest("a") is None


def test_a_value_marshal_cannot_write_raises(make):
    """A record value that marshal refuses (an object in ``fields``) makes the digest raise
    ValueError, so a digest built on the parts refuses too (the landscape's: no sharing)."""
    store = make("json")
    items = items_for("a")
    items[0].fields["odd"] = object()
    store.add(items)
    with pytest.raises(ValueError):
        store.state_digest("a")

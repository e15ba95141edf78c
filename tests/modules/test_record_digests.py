"""`RecordDigests` (the records part of `Store.state_digest`, rehashed only where a record changed)
gives what a full rehash of every record gives: at every read point of a write pass, for every store
and LM-free manager of the conversation space; after in-place changes a store write announced, and
after ones it did not (lineage, usage, status); and across a load."""
from __future__ import annotations

import hashlib
import marshal

import pytest

from memarch.benchmarks import get_benchmark
from memarch.benchmarks.evaluation.settings import EvaluationSettings
from memarch.benchmarks.evaluation.stream import run_stream
from memarch.modules.stores._record_digests import MARSHAL_VERSION, RecordDigests, record_state
from memarch.modules.stores.json_store import JsonStore
from memarch.modules.stores.vector import VectorStore
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.program import MemoryProgram
from memarch.pipeline.space import ArchitectureSpace

from store_helpers import items_for

ACTORS = {"manager:lightweight": "manager:*"}


def _full(store, namespace: str, actors=ACTORS) -> list[bytes]:
    """The records part as a rehash of every record computes it."""
    return [hashlib.sha256(marshal.dumps(record_state(it, actors), MARSHAL_VERSION)).digest()
            for it in store._records.get(namespace, {}).values()]


def _pairs():
    space = ArchitectureSpace("conversation")
    seen: dict[tuple[str, str], tuple[str, str, str]] = {}
    for store, retriever, manager in space.triples():
        if store != "llm_graph":
            seen.setdefault((store, manager), (store, retriever, manager))
    return sorted(seen.values())


@pytest.mark.parametrize("triple", _pairs(), ids=lambda t: "|".join(t))
@pytest.mark.parametrize("budget", [None, 40])
def test_every_read_point_of_a_write_pass_gives_the_full_rehash(triple, budget, hash_res):
    store, retriever, manager = triple
    arch = Architecture(("turn", "summary", "fact", "entity", "event"), store, retriever, manager)
    config = {"manager": {"memory_budget": budget, "period": 2}} if budget else None  # prunes and merges
    program = MemoryProgram(arch, resources=hash_res, top_k=4, context_budget=200, config=config)
    bench = get_benchmark("generated")
    checked: list[int] = []

    def on_read_point(namespace: str, trace) -> None:
        st = program.store
        actors = {program.manager.actor: "manager:*"}
        assert st.state_digest(namespace, actors=actors)["records"] == _full(st, namespace, actors)
        checked.append(len(st._records.get(namespace, {})))

    run_stream(program, bench, EvaluationSettings(context_budget=200, top_k=4), on_read_point=on_read_point)
    assert len(checked) >= 7 and max(checked) > 20
    if budget:  # the budget policies changed records in place (tombstones, merges)
        assert any(not it.active for recs in program.store._records.values() for it in recs.values())


def test_changes_no_write_announced_are_seen(hash_resources):
    store = VectorStore(hash_resources)
    store.add(items_for("a"))
    first = store.state_digest("a")["records"]
    assert first == _full(store, "a", {})
    item = store.list("a")[1]
    item.log("boosted", "manager:lightweight")  # in place, no update()
    after_log = store.state_digest("a")["records"]
    assert after_log == _full(store, "a", {}) and after_log[1] != first[1] and after_log[0] == first[0]
    item.usage.retrieved += 1
    assert store.state_digest("a")["records"] == _full(store, "a", {}) != after_log
    item.fields["note"] = "x"
    assert store.state_digest("a")["records"] == _full(store, "a", {})


def test_a_write_with_an_unchanged_shape_is_seen_through_the_journal(hash_resources):
    """Same lineage length, usage, status and field count: only the journal says it changed."""
    store = JsonStore(hash_resources)
    items = items_for("a")
    items[0].fields["topic"] = "apples"
    store.add(items)
    before = store.state_digest("a")["records"]
    stored = store.get(items[0].id, "a")
    stored.fields["topic"] = "pears"
    store.update(stored)
    after = store.state_digest("a")["records"]
    assert after == _full(store, "a", {}) and after[0] != before[0] and after[1:] == before[1:]


def test_other_actors_and_a_load_start_over(hash_resources, tmp_path):
    store = JsonStore(hash_resources)
    items = items_for("a")
    for it in items:
        it.log("admitted", "manager:lightweight")
    store.add(items)
    plain = store.state_digest("a")["records"]
    renamed = store.state_digest("a", actors=ACTORS)["records"]
    assert renamed == _full(store, "a", ACTORS) != plain == _full(store, "a", {})
    store.save(tmp_path / "s")
    loaded = JsonStore.load(tmp_path / "s", hash_resources)
    assert loaded.state_digest("a")["records"] == plain
    store.load_state({"store": "json", "namespaces": {}})
    assert store.state_digest("a")["records"] == []


def test_the_memo_forgets_records_the_namespace_lost():
    class Tiny:
        def __init__(self):
            self._records = {"a": {}}
            self.v = 0

        def version(self, ns):
            return self.v

        def changes_since(self, ns, version):
            return None  # nothing can be replayed: every call starts over

    from memarch.pipeline.items import MemoryItem

    tiny, digests = Tiny(), RecordDigests()
    tiny._records["a"] = {it.id: it for it in (MemoryItem("x", "turn"), MemoryItem("y", "turn"))}
    def of():
        return digests.of(tiny._records["a"], "a", tiny.version("a"), tiny.changes_since, {})

    assert len(of()) == 2
    tiny._records["a"].pop(next(iter(tiny._records["a"])))
    assert len(of()) == 1 and len(digests._memo["a"][2]) == 1


def test_the_dense_digest_differs_exactly_when_the_serialised_index_does():
    """`DenseIndex.digest` (remembered, from per-vector hashes) against `to_bytes`, over random adds,
    replacements and removals of two indexes fed the same writes, now and then with another vector
    for one of them (they differ until that id is written again alike)."""
    import numpy as np

    from memarch.modules.stores._faiss_index import DenseIndex

    rng = np.random.default_rng(3)
    one, two = DenseIndex(8), DenseIndex(8)
    vec = {f"i{j}": rng.standard_normal(8).astype(np.float32) for j in range(30)}
    pairs = 0
    for step in range(120):
        ids = [f"i{j}" for j in rng.choice(30, size=3, replace=False)]
        op = rng.integers(3)
        for index in (one, two):
            if op == 2:
                index.remove(ids[:1])
            else:
                index.add(ids, np.stack([vec[i] + (1 if index is two and step % 13 == 0 else 0) for i in ids]))
        same_bytes = one.to_bytes() == two.to_bytes()
        assert (one.digest() == two.digest()) == same_bytes
        # the state digest: the vectors and every id with its integer id
        assert (one.state_digest() == two.state_digest()) == (same_bytes and one.meta() == two.meta())
        pairs += same_bytes
        assert one.digest() == one.digest()
        fresh = DenseIndex.from_saved(one.to_bytes(), one.meta())
        assert fresh.digest() == one.digest() and fresh.state_digest() == one.state_digest()
    assert 0 < pairs < 120

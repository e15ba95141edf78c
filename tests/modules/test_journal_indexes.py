"""The read caches issue 35 added, each caught up from the store's change journal, answer what a scan
of the namespace answers after every kind of write: the managers' key index (an upsert's items of
the same key), a store's ids per filter (`Store.matching_ids`), and the aware sides' entity and date
index (`namespace_facts`)."""
from __future__ import annotations

import numpy as np
import pytest

from memarch.modules.managers._conflicts import same_key
from memarch.modules.managers._keys import same_key_items
from memarch.modules.retrievers._aware import _NamespaceFacts, namespace_facts
from memarch.modules.stores.base import matches
from memarch.modules.stores.hybrid import HybridStore
from memarch.modules.stores.json_store import JsonStore
from memarch.modules.stores.vector import VectorStore
from memarch.pipeline.items import MemoryItem
from test_incremental_index import _step

NAMES = ("Ann", "Bo", "Caroline")
FILTERS = ({"outcome": "success"}, {"outcome": ["failure", "unknown"]}, {"kind": "fact"}, {"task": "apple"})


def _keyed(rng: np.random.Generator, serial: int) -> MemoryItem:
    """A fact with a key, a speaker and a date: what the key, filter and entity indexes read."""
    day = 1 + int(rng.integers(28))
    return MemoryItem(f"{NAMES[serial % 3]} said fact {serial}", "fact", key=f"{NAMES[serial % 3].lower()}|job",
                      fields={"speaker": NAMES[serial % 3], "task": ("apple", "pear")[serial % 2]},
                      event_time=f"2023-05-{day:02d}", outcome=("success", "failure", "unknown")[serial % 3])


@pytest.mark.parametrize("store_cls", [JsonStore, VectorStore, HybridStore])
def test_the_journal_indexes_equal_a_scan_after_random_writes(store_cls, hash_resources):
    store = store_cls(hash_resources)
    rng = np.random.default_rng(11)
    for serial in range(90):
        _step(store, rng, serial)
        if serial % 3 == 0:
            store.add([_keyed(rng, serial)])
        if serial % 7 == 0 and store.list():  # a keyed item changes key in place, then tells the store
            facts = [it for it in store.list() if it.kind == "fact"]
            if facts:
                facts[0].key = f"moved|{serial}"
                store.update(facts[0])
        active = store.list()
        for probe in (it for it in active if it.key is not None):
            assert same_key_items(store, "default", probe) == [it for it in active if same_key(it, probe)]
        for where in FILTERS:
            records = store.list(include_deleted=True)
            assert store.matching_ids("default", where) == {it.id for it in records if matches(it, where)}
        fresh, cached = _NamespaceFacts(active), namespace_facts(store, "default")
        assert cached.newest == fresh.newest
        assert list(cached.names.items()) == list(fresh.names.items())  # same names, same order


def test_a_filter_with_a_callable_is_not_cached_and_still_filters(hash_resources):
    store = VectorStore(hash_resources)
    store.add([MemoryItem("red apple", "tip", outcome="success"), MemoryItem("green pear", "tip")])
    assert store.matching_ids("default", {"outcome": lambda o: o == "success"}) is None
    vector = hash_resources.embedder.embed_one("apple")
    found = store.search(vector, 5, where={"outcome": lambda o: o == "success"})
    assert [it.text for it, _ in found] == ["red apple"]
    assert store.search(vector, 5, where={"outcome": "failure"}) == []  # nothing matches: nothing walked

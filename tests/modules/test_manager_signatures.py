"""The managers' exact-duplicate lookup, caught up from the store's change journal, answers what
re-hashing the whole namespace answers, after every kind of write (and with the same text twice)."""
from __future__ import annotations

import numpy as np
import pytest

from memarch.modules.managers._conflicts import signature
from memarch.modules.managers._signatures import SignatureIndex, signature_index
from memarch.modules.stores.hybrid import HybridStore
from memarch.modules.stores.json_store import JsonStore
from memarch.pipeline.items import MemoryItem
from test_incremental_index import _step


def _brute(store) -> dict[str, str]:
    return {signature(it): it.id for it in store.list()}


@pytest.mark.parametrize("store_cls", [JsonStore, HybridStore])
def test_signature_index_equals_rehashing_after_random_writes(store_cls, hash_resources):
    store = store_cls(hash_resources)
    rng = np.random.default_rng(7)
    index = signature_index(store, "default")
    gone: set[str] = set()
    for serial in range(80):
        _step(store, rng, serial)
        if serial % 5 == 0 and store.list():  # the same text again under a new id: a tie, latest wins
            twin = store.list()[int(rng.integers(len(store.list())))]
            store.add([MemoryItem(twin.text, twin.kind, episode_id="dup", fields=dict(twin.fields))])
        expected = _brute(store)
        current = signature_index(store, "default")
        assert current is index, "caught up in place, not rebuilt"
        assert {sig: current.get(sig, store).id for sig in expected} == expected
        gone |= {signature(it) for it in store.tombstones()} - set(expected)
        assert all(current.get(sig, store) is None for sig in gone - set(expected))


def test_signature_index_rebuilds_when_the_journal_cannot_say(hash_resources):
    store = JsonStore(hash_resources)
    store.add([MemoryItem("milk in the fridge", "tip")])
    index = SignatureIndex(store, "default")
    store._journal.reset("default", store.version("default") + 5)  # as after a load
    store._bump("default", ["x"])
    assert index.sync(store, "default") is False
    assert signature_index(store, "default").get(signature(store.list()[0]), store).text == "milk in the fridge"


def test_curation_looks_only_at_items_written_since_and_still_finds_every_misleading_one(hash_resources):
    from memarch.modules.managers.lightweight import LightweightManager

    store = JsonStore(hash_resources)
    manager = LightweightManager(hash_resources)
    items = [MemoryItem(f"tip number {i}", "tip") for i in range(6)]
    store.add(items)
    manager.curate(store, "default")
    manager.tick(store, "default")  # the logical clock's one-off scan, outside what is checked
    assert store.count() == 6
    seen: list[str] = []
    original = store.list
    store.list = lambda *a, **k: seen.append("full scan") or original(*a, **k)
    bad = store.get(items[2].id)
    bad.usage.helped_failure = manager.curate_failures
    store.update(bad)
    manager.curate(store, "default")
    assert not seen, "caught up from the journal, no full scan"
    assert store.get(items[2].id) is None and store.count() == 5
    store._journal.reset("default", store.version("default") + 1)   # the journal cannot say: full scan
    store._bump("default", ["x"])
    manager.curate(store, "default")
    assert seen == ["full scan"]

"""The store's change log (`Store.log_changes`): what its writes touched, logged once asked for,
handed over once each; every registered store keeps it through the base class."""
from __future__ import annotations

import pytest

from memarch.pipeline.items import MemoryItem
from memarch.pipeline.registry import REGISTRY

from store_helpers import items_for, store_factory


@pytest.fixture
def make(hash_resources, tmp_path):
    return store_factory(hash_resources, tmp_path)


@pytest.mark.parametrize("name", REGISTRY.names("store"))
def test_every_store_logs_the_items_its_writes_touch(make, name):
    store = make(name)
    items, bob = items_for(), items_for("bob")[:1]
    store.add(items[:2])  # before the log is asked for: not logged
    log = store.log_changes()
    assert store.log_changes() is log and not log and log.drain() == []
    store.add(items[2:4])
    store.update(items[0])
    store.delete(items[1].id, reason="stale")
    store.add(bob)
    store.update(items[2])  # touched again: still once, at its first touch
    with pytest.raises(KeyError):
        store.update(MemoryItem(text="never stored", kind="tip"))
    assert log.pending() == [("default", items[2].id), ("default", items[3].id), ("default", items[0].id),
                             ("default", items[1].id), ("bob", bob[0].id)]
    assert len(log.drain()) == 5 and not log and log.pending() == []


@pytest.mark.parametrize("name", REGISTRY.names("store"))
def test_a_delete_of_an_item_made_inactive_in_place_is_logged(make, name):
    store = make(name)
    items = items_for()
    store.add(items)
    log = store.log_changes()
    stored = store.get(items[0].id)
    stored.status = "superseded"  # a caller changed the stored object itself: the row must be rewritten
    store.delete(items[0].id)
    assert log.drain() == [("default", items[0].id)]


def test_a_store_logs_nothing_until_asked(make):
    store = make("vector")
    store.add(items_for())
    assert "_change_log" not in vars(store)  # the class default (None): writes pay one `is None`

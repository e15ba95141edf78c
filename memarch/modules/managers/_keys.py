"""Keyed items per store namespace — (key, kind) -> the active items' ids in the store's order —
caught up from the store's change journal, so an upsert by key reads the few items of its key
instead of scanning the namespace once per written item."""
from __future__ import annotations

import weakref

from memarch.modules.stores.base import Store
from memarch.pipeline.items import MemoryItem


class _KeyIndex:
    def __init__(self, store: Store, namespace: str):
        self.version = store.version(namespace)
        self.key_of: dict[str, tuple[str, str]] = {}  # id -> (key, kind)
        self.ids: dict[tuple[str, str], list[str]] = {}  # (key, kind) -> ids in the store's order
        for item in store.list(namespace):
            if item.key is not None:
                self.key_of[item.id] = k = (item.key, item.kind)
                self.ids.setdefault(k, []).append(item.id)

    def sync(self, store: Store, namespace: str) -> bool:
        """Catch up with the writes since the last sync; False when the journal cannot say (rebuild)."""
        version = store.version(namespace)
        if version == self.version:
            return True
        touched = store.changes_since(namespace, self.version)
        if touched is None:
            return False
        for iid in touched:
            old = self.key_of.pop(iid, None)
            if old is not None:
                self.ids[old].remove(iid)
            item = store.get(iid, namespace)  # active only
            if item is not None and item.key is not None:
                self.key_of[iid] = k = (item.key, item.kind)
                ids = self.ids.setdefault(k, [])
                ids.append(iid)
                ids.sort(key=lambda i: store.position(i, namespace))
        self.version = version
        return True


_INDEXES: "weakref.WeakKeyDictionary[Store, dict[str, _KeyIndex]]" = weakref.WeakKeyDictionary()


def same_key_items(store: Store, namespace: str, item: MemoryItem) -> list[MemoryItem]:
    """The active stored items with ``item``'s key and kind, in the order of ``store.list`` (none
    for an unkeyed item): ``[it for it in store.list(namespace) if same_key(it, item)]``."""
    if item.key is None:
        return []
    per_store = _INDEXES.setdefault(store, {})
    index = per_store.get(namespace)
    if index is None or not index.sync(store, namespace):
        index = per_store[namespace] = _KeyIndex(store, namespace)
    found = (store.get(i, namespace) for i in index.ids.get((item.key, item.kind), ()))
    return [it for it in found if it is not None]

"""Keyed items per store namespace — (key, kind) -> the active items' ids in the store's order —
caught up from the store's change journal, so an upsert by key reads the few items of its key
instead of scanning the namespace once per written item."""
from __future__ import annotations

from memarch.modules.managers._journal_index import JournalIndex
from memarch.modules.stores.base import Store
from memarch.pipeline.items import MemoryItem


class _KeyIndex(JournalIndex):
    def __init__(self, store: Store, namespace: str):
        self.key_of: dict[str, tuple[str, str]] = {}  # id -> (key, kind)
        self.ids: dict[tuple[str, str], list[str]] = {}  # (key, kind) -> ids in the store's order
        super().__init__(store, namespace)

    def _put(self, item: MemoryItem, store: Store) -> None:
        if item.key is not None:
            self.key_of[item.id] = k = (item.key, item.kind)
            ids = self.ids.setdefault(k, [])
            ids.append(item.id)
            if len(ids) > 1:  # a touched item comes back at its place in the store's order
                ids.sort(key=lambda i: store.position(i, self.namespace))

    def _drop(self, item_id: str) -> None:
        old = self.key_of.pop(item_id, None)
        if old is not None:
            self.ids[old].remove(item_id)


def same_key_items(store: Store, namespace: str, item: MemoryItem) -> list[MemoryItem]:
    """The active stored items with ``item``'s key and kind, in the order of ``store.list`` (none
    for an unkeyed item): ``[it for it in store.list(namespace) if same_key(it, item)]``."""
    if item.key is None:
        return []
    per_store = store.caches.part(__name__)  # {namespace: _KeyIndex}
    index = per_store.get(namespace)
    if index is None or not index.sync(store, namespace):
        index = per_store[namespace] = _KeyIndex(store, namespace)
    found = (store.get(i, namespace) for i in index.ids.get((item.key, item.kind), ()))
    return [it for it in found if it is not None]

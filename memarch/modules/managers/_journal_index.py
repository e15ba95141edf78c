"""`JournalIndex`: an index over a namespace's active items that catches up from the store's change
journal (the ids each write touched) instead of rescanning the namespace; a subclass says how an
item enters (`_put`) and leaves (`_drop`)."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memarch.modules.stores.base import Store
    from memarch.pipeline.items import MemoryItem


class JournalIndex:
    def __init__(self, store: "Store", namespace: str):
        self.namespace = namespace
        self.version = store.version(namespace)
        for item in store.list(namespace):
            self._put(item, store)

    def _put(self, item: "MemoryItem", store: "Store") -> None:
        raise NotImplementedError

    def _drop(self, item_id: str) -> None:
        raise NotImplementedError

    def sync(self, store: "Store", namespace: str) -> bool:
        """Catch up with the writes since ``self.version``; False when the journal cannot say
        which items changed (the caller rebuilds)."""
        version = store.version(namespace)
        if version == self.version:
            return True
        touched = store.changes_since(namespace, self.version)
        if touched is None:
            return False
        for item_id in touched:
            self._drop(item_id)
            item = store.get(item_id, namespace)  # None when no longer active
            if item is not None:
                self._put(item, store)
        self.version = version
        return True

"""Exact-duplicate signatures of a namespace's active items, kept per store and caught up from the
store's change journal (as the BM25 index is), so an insert no longer re-hashes the whole memory."""
from __future__ import annotations

from typing import TYPE_CHECKING

from memarch.modules.managers._conflicts import Signatures
from memarch.modules.managers._journal_index import JournalIndex

if TYPE_CHECKING:
    from memarch.modules.stores.base import Store
    from memarch.pipeline.items import MemoryItem


class SignatureIndex(JournalIndex):
    """``signature -> active item`` for one namespace, the latest inserted winning a tie (what
    ``{signature(it): it for it in store.list(ns)}`` gives), updated from the ids each write touched.

    Example::

        index = signature_index(store, "alice")
        twin = index.get(signature(new_item), store)   # an active item with the same text, or None

    Args:
        store: the store whose active items are indexed.
        namespace: the namespace indexed.
    """

    def __init__(self, store: "Store", namespace: str):
        self._sig_of: dict[str, str] = {}
        self._ids_of: dict[str, set[str]] = {}
        self._sign = store.resources.texts[Signatures].sign  # `signature`, through the store's memo
        super().__init__(store, namespace)

    def _put(self, item: "MemoryItem", store: "Store") -> None:
        sig = self._sign(item.kind, item.text)
        self._sig_of[item.id] = sig
        self._ids_of.setdefault(sig, set()).add(item.id)

    def _drop(self, item_id: str) -> None:
        sig = self._sig_of.pop(item_id, None)
        if sig is not None:
            ids = self._ids_of[sig]
            ids.discard(item_id)
            if not ids:
                del self._ids_of[sig]

    def get(self, sig: str, store: "Store") -> "MemoryItem | None":
        """The active item with signature ``sig`` (the latest inserted among equals), or None."""
        ids = self._ids_of.get(sig)
        if not ids:
            return None
        latest = max(ids, key=lambda i: store.position(i, self.namespace))
        return store.get(latest, self.namespace)


def signature_index(store: "Store", namespace: str) -> SignatureIndex:
    """The signature index of ``store``'s active items in ``namespace``, up to date."""
    per_store = store.caches.part(__name__)  # {namespace: SignatureIndex}
    index = per_store.get(namespace)
    if index is None or not index.sync(store, namespace):
        index = per_store[namespace] = SignatureIndex(store, namespace)
    return index

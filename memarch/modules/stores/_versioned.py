"""A value derived from one namespace of a store (an index, a table of facts), kept in the store's
own caches (``store.caches``) and rebuilt only when ``store.version(namespace)`` moves; it goes
with the store."""
from __future__ import annotations

from typing import Any, Callable, TypeVar

T = TypeVar("T")


class VersionedCache:
    """``cache.get(store, namespace, build)``: ``build()`` once per version of the namespace; the
    values live in ``store.caches`` under this object, nothing in the cache itself.

    Example::

        _TURNS = VersionedCache()
        index = _TURNS.get(store, "default", lambda: TurnIndex(store.list("default")))
    """

    def get(self, store: Any, namespace: str, build: Callable[[], T]) -> T:
        per_store = store.caches.part(self)
        version = store.version(namespace)
        cached = per_store.get(namespace)
        if cached is None or cached[0] != version:
            cached = per_store[namespace] = (version, build())
        return cached[1]

"""A value derived from one namespace of a store (an index, a table of facts), kept per store object
and rebuilt only when ``store.version(namespace)`` moves; it dies with the store."""
from __future__ import annotations

import weakref
from typing import Any, Callable, TypeVar

T = TypeVar("T")


class VersionedCache:
    """``cache.get(store, namespace, build)``: ``build()`` once per version of the namespace.

    Example::

        _TURNS = VersionedCache()
        index = _TURNS.get(store, "default", lambda: TurnIndex(store.list("default")))
    """

    def __init__(self) -> None:
        self._per_store: "weakref.WeakKeyDictionary[Any, dict[str, tuple[Any, Any]]]" = weakref.WeakKeyDictionary()

    def get(self, store: Any, namespace: str, build: Callable[[], T]) -> T:
        per_store = self._per_store.setdefault(store, {})
        version = store.version(namespace)
        cached = per_store.get(namespace)
        if cached is None or cached[0] != version:
            cached = per_store[namespace] = (version, build())
        return cached[1]

"""`StoreCaches` (``store.caches``): what the modules derive from one store and keep between calls
— a lexical index, a session index, the last ranking — owned by the store, so it goes when the store
goes (a `Memory` that rebuilds its program drops them with the old store)."""
from __future__ import annotations

from typing import Any, Hashable


class StoreCaches:
    """One store's derived state, by owner: each module keeps its part under a key of its own (its
    module's name, a `VersionedCache`), usually a dict by namespace that it checks against
    ``store.version(namespace)`` before use.

    Not state of the store: never saved, never copied (a copied store starts with none), and not a
    dict, so that walks over a module's attributes (``dspy.Module.named_sub_modules``) stop here.

    Example::

        part = store.caches.part(__name__)          # {} at the first ask, then the same dict
        index = part.get(namespace)
        if index is None or not index.sync(store, namespace):
            index = part[namespace] = Index(store, namespace)
    """

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: dict[Hashable, dict[Any, Any]] = {}

    def part(self, owner: Hashable) -> dict[Any, Any]:
        """``owner``'s part: a dict it alone reads and writes, empty the first time."""
        got = self._parts.get(owner)
        if got is None:  # setdefault: two threads asking at once get one dict
            got = self._parts.setdefault(owner, {})
        return got

    def owners(self) -> list[Hashable]:
        """The owners that keep a part (for tests and introspection)."""
        return list(self._parts)

    def clear(self) -> None:
        """Drop every part (each owner rebuilds its own on its next read)."""
        self._parts.clear()

    def __copy__(self) -> "StoreCaches":
        return StoreCaches()

    def __deepcopy__(self, memo: dict) -> "StoreCaches":
        return StoreCaches()

    def __reduce__(self):
        return (StoreCaches, ())

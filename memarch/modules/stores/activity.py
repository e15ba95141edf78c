"""The filters most reads pass to a store: "active items of this namespace" (`ActiveIn`) and its
negation for ``exclude=`` (`NotActiveIn`). A store's own indexes (its FAISS index, the BM25 index
caught up from its journal) hold exactly the active items of their namespace — an item leaves them
through `Store.update` / `Store.delete` — so a store that recognises one of these filters for the
namespace it searches may skip calling it per hit: the result is the same."""
from __future__ import annotations

from memarch.pipeline.items import MemoryItem


class ActiveIn:
    """``keep`` predicate: True for an active item of ``namespace`` (any namespace when None).

    Example::

        keep = ActiveIn("conv-26")
        keep(item)              # item.status == "active" and item.namespace == "conv-26"
        keep.spares("conv-26")  # True: an index of that namespace holds nothing it rejects
    """

    __slots__ = ("namespace",)

    def __init__(self, namespace: str | None = None):
        self.namespace = namespace

    def __call__(self, item: MemoryItem) -> bool:
        return item.status == "active" and (self.namespace is None or item.namespace == self.namespace)

    def spares(self, namespace: str) -> bool:
        """Whether every active item of ``namespace`` passes: true of the namespace's own indexes."""
        return self.namespace is None or self.namespace == namespace


class NotActiveIn(ActiveIn):
    """``exclude`` predicate: `ActiveIn`'s negation (True for an item a read must not return)."""

    __slots__ = ()

    def __call__(self, item: MemoryItem) -> bool:
        return item.status != "active" or (self.namespace is not None and item.namespace != self.namespace)


INACTIVE = NotActiveIn()  # excludes what is not active, in any namespace

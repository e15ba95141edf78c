"""`DenseRows`: the brute-force dense index of a store without FAISS (``json``), kept up to date
write by write: new items append rows, removed ones retire theirs, so a read after one write costs
one embedding instead of re-reading every vector."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Protocol

import numpy as np

from memarch.pipeline.selection import nth_largest

if TYPE_CHECKING:
    from memarch.pipeline.items import MemoryItem


class RowSource(Protocol):
    """What the rows read of their store (a `Store`; a protocol so the store's base may own them)."""

    resources: Any

    def list(self, namespace: str) -> list["MemoryItem"]: ...
    def vectors(self, items: list["MemoryItem"]) -> np.ndarray: ...
    def position(self, item_id: str, namespace: str) -> int: ...
    def version(self, namespace: str) -> int: ...
    def changes_since(self, namespace: str, version: int) -> Any: ...
    def get(self, item_id: str, namespace: str) -> "MemoryItem | None": ...

FIRST_CHUNK = 64


class DenseRows:
    """Rows of unit vectors for one namespace's active items, ranked by cosine, ties by insertion.

    Example::

        rows = DenseRows.build(store, "alice")
        rows.sync(store, "alice")              # after writes: False means "rebuild me"
        next(rows.ranked(query_vector))        # ("tip-1", 0.93)

    Args:
        dim: vector dimension.
    """

    def __init__(self, dim: int):
        self.matrix = np.zeros((16, dim), np.float32)
        self.keys = np.zeros(16, np.int64)  # the store's insertion rank of each row's item
        self.alive = np.zeros(16, bool)
        self.ids: list[str] = []
        self.texts: list[str] = []
        self.row_of: dict[str, int] = {}
        self.live = 0
        self.version = -1

    @classmethod
    def build(cls, store: RowSource, namespace: str) -> "DenseRows":
        items = store.list(namespace)
        rows = cls(store.resources.embedder.dim)
        if items:
            rows._append(items, store.vectors(items), [store.position(it.id, namespace) for it in items])
        rows.version = store.version(namespace)
        return rows

    def sync(self, store: RowSource, namespace: str) -> bool:
        """Catch up with the writes since the last sync; False when a rebuild is due instead
        (the journal does not reach back, or retired rows would outnumber live ones)."""
        version = store.version(namespace)
        if version == self.version:
            return True
        touched = store.changes_since(namespace, self.version)
        dead = len(self.ids) - self.live
        if touched is None or dead + len(touched) > max(4096, self.live):
            return False
        fresh: list["MemoryItem"] = []
        for iid in touched:
            item, row = store.get(iid, namespace), self.row_of.get(iid)
            if row is not None:
                if item is not None and self.texts[row] == item.text:
                    continue  # usage or lineage changed: the vector did not
                self.alive[row] = False
                del self.row_of[iid]
                self.live -= 1
            if item is not None:
                fresh.append(item)
        if fresh:
            self._append(fresh, store.vectors(fresh), [store.position(it.id, namespace) for it in fresh])
        self.version = version
        return True

    def _append(self, items: list["MemoryItem"], vectors: np.ndarray, keys: list[int]) -> None:
        start, end = len(self.ids), len(self.ids) + len(items)
        if end > len(self.alive):
            cap = max(end, 2 * len(self.alive))
            self.matrix = np.concatenate([self.matrix, np.zeros((cap - len(self.alive), self.matrix.shape[1]),
                                                                np.float32)])
            self.keys = np.concatenate([self.keys, np.zeros(cap - len(self.keys), np.int64)])
            self.alive = np.concatenate([self.alive, np.zeros(cap - len(self.alive), bool)])
        self.matrix[start:end] = vectors
        self.keys[start:end] = keys
        self.alive[start:end] = True
        for j, it in enumerate(items, start=start):
            self.row_of[it.id] = j
        self.ids.extend(it.id for it in items)
        self.texts.extend(it.text for it in items)
        self.live += len(items)

    def ranked(self, vector: np.ndarray) -> Iterator[tuple[str, float]]:
        """Live items by decreasing cosine, ties in insertion order; sorts only what is read."""
        n = len(self.ids)
        if not self.live:
            return
        scores = self.matrix[:n] @ np.asarray(vector, dtype=np.float32)
        live = np.flatnonzero(self.alive[:n])
        s, keys = scores[live], self.keys[live]
        done, take = 0, FIRST_CHUNK
        while done < len(live):
            if take >= len(live):
                head = np.arange(len(live))
            else:  # every row scoring at least the take-th best, so ties at the cut are all in
                head = np.flatnonzero(s >= nth_largest(s, take))
            head = head[np.lexsort((keys[head], -s[head]))]
            for j in head[done:].tolist():
                yield self.ids[live[j]], float(s[j])
            done, take = len(head), 4 * take

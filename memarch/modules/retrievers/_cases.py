"""Case matching shared by `contrastive` and `cbr_rerank`: an item scores
``max(case, content_weight x content)``, where ``case`` compares the query with the task the item
was learned from and ``content`` with the item's text.

The best ``n`` items are found exactly without scanning every vector: each of them is among the
``n`` best by case or the ``n`` best by content (both parts are monotone in the score), so the
store's own dense search supplies the content side and a small matrix of distinct tasks the case side.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from memarch.modules.stores.base import matches
from memarch.pipeline.selection import nth_largest

if TYPE_CHECKING:
    from memarch.modules.stores.base import Store, Where
    from memarch.pipeline.embed import Embedder
    from memarch.pipeline.items import MemoryItem


NO_ITEM = np.iinfo(np.int64).max  # the first-position key of a row without items


def task_of(item: "MemoryItem") -> str | None:
    """The task an item was learned from (experience encoders store it in ``fields["task"]``)."""
    task = item.fields.get("task") if isinstance(item.fields, dict) else None
    return task if isinstance(task, str) and task.strip() else None


def case_text(item: "MemoryItem") -> str:
    """What a query is matched against as the item's case: its task, else its text."""
    return task_of(item) or item.text


class TaskIndex:
    """Distinct tasks of a namespace's active items, each embedded once, with the ids of its items;
    kept up to date in place from the store's journal (a new task appends a row, an item that
    leaves or changes task leaves its group; a task left without items keeps an empty row).
    Tasks with equal similarity rank by the store position of their first item, as in a rebuild.

    Example::

        tasks = TaskIndex(store, "default", embedder)
        store.add([new_item]); tasks.sync(store, "default")   # False: rebuild instead
        sims = tasks.similarities(query_vector)
        [tasks.members[j] for j in tasks.ranked(sims, 5)]

    Args:
        store, namespace: whose active items are indexed.
        embedder: embeds the task texts.
    """

    def __init__(self, store: "Store", namespace: str, embedder: "Embedder"):
        self.embedder = embedder
        self.tasks: list[str] = []
        self.task_row: dict[str, int] = {}
        self.members: list[dict[str, int]] = []  # per row: id -> store position of its active items
        self.row: dict[str, int] = {}  # item id -> its task's row
        self._buffer = np.zeros((16, embedder.dim), np.float32)  # task vectors, grown by doubling
        self._first = np.full(16, NO_ITEM, np.int64)  # per row: the smallest position among its items
        self.empty = 0  # rows whose items all left
        self._last: tuple[bytes, np.ndarray] | None = None
        self.version = store.version(namespace)
        self._join(store, namespace, store.list(namespace))

    def _join(self, store: "Store", namespace: str, items: list["MemoryItem"]) -> None:
        new_tasks: list[str] = []
        for it in items:
            task = task_of(it)
            if task is None:
                continue
            j = self.task_row.get(task)
            if j is not None and not self.members[j]:
                self.empty -= 1
            if j is None:
                j = self.task_row[task] = len(self.tasks)
                self.tasks.append(task)
                self.members.append({})
                new_tasks.append(task)
                if j >= len(self._first):
                    self._first = np.concatenate([self._first, np.full(len(self._first), NO_ITEM, np.int64)])
            pos = store.position(it.id, namespace)
            self.members[j][it.id] = pos
            self._first[j] = min(int(self._first[j]), pos)
            self.row[it.id] = j
        if new_tasks:
            end = len(self.tasks)
            if end > len(self._buffer):
                grown = np.zeros((max(end, 2 * len(self._buffer)), self._buffer.shape[1]), np.float32)
                grown[:end - len(new_tasks)] = self._buffer[:end - len(new_tasks)]
                self._buffer = grown
            self._buffer[end - len(new_tasks):end] = self.embedder.embed(new_tasks)
            self._last = None

    @property
    def vectors(self) -> np.ndarray:
        """One row per task."""
        return self._buffer[:len(self.tasks)]

    def sync(self, store: "Store", namespace: str) -> bool:
        """Catch up with the writes since the last sync; False when a rebuild is due instead."""
        version = store.version(namespace)
        if version == self.version:
            return True
        touched = store.changes_since(namespace, self.version)
        live_rows = len(self.tasks) - self.empty
        if touched is None or self.empty + len(touched) > max(1024, live_rows):
            return False
        fresh = []
        for iid in touched:
            item, j = store.get(iid, namespace), self.row.pop(iid, None)
            if j is not None:
                group = self.members[j]
                if group.pop(iid) == self._first[j]:
                    self._first[j] = min(group.values(), default=NO_ITEM)
                self.empty += not group
            if item is not None:
                fresh.append(item)
        self._join(store, namespace, fresh)
        self.version = version
        return True

    def similarities(self, vector: np.ndarray) -> np.ndarray:
        """Cosine of ``vector`` with every task (the last answer is kept: contrastive asks twice)."""
        key = vector.tobytes()
        if self._last is None or self._last[0] != key:
            self._last = (key, self.vectors @ vector)
        return self._last[1]

    def ranked(self, sims: np.ndarray, first: int):
        """Task rows by decreasing similarity, ties by their first item's store position; sorts
        only the ``first`` best (and rows tied with the last of them) unless more are read."""
        keys = self._first[:len(sims)]
        if len(sims) > first:
            head = np.flatnonzero(sims >= nth_largest(sims, first))
        else:
            head = np.arange(len(sims))
        yield from head[np.lexsort((keys[head], -sims[head]))]
        if len(head) < len(sims):
            rest = np.setdiff1d(np.arange(len(sims)), head, assume_unique=True)
            yield from rest[np.lexsort((keys[rest], -sims[rest]))]


def task_index(store: "Store", namespace: str, embedder: "Embedder") -> TaskIndex:
    """The `TaskIndex` of ``store``/``namespace``, brought up to date with the writes since it was
    last read (rebuilt only when the store's journal cannot say what changed)."""
    per_store = store.caches.part(__name__)  # {(namespace, embedder): TaskIndex}
    key = (namespace, embedder.model_id)
    index = per_store.get(key)
    if index is None or not index.sync(store, namespace):
        index = per_store[key] = TaskIndex(store, namespace, embedder)
    return index


@dataclass
class CaseMatch:
    """One item's case score and its two parts; ``task`` in the trace says whether it had a task."""

    item: "MemoryItem"
    score: float  # max(case, content_weight x content)
    case: float
    content: float

    def trace(self) -> dict[str, Any]:
        return {"cbr": round(self.score, 6), "case": round(self.case, 6), "content": round(self.content, 6),
                "task": task_of(self.item) is not None}


def best_cases(store: "Store", vector: np.ndarray, namespace: str, n: int, *, content_weight: float,
               embedder: "Embedder", exclude: Callable[["MemoryItem"], bool],
               where: "Where | None" = None) -> list[CaseMatch]:
    """The ``n`` best items by case score among those ``where`` selects and ``exclude`` spares.

    An item without a task is its own case (``case = content``).

    Example::

        best_cases(store, embedder.embed_one("cook eggs"), "default", 15, content_weight=0.7,
                   embedder=embedder, exclude=retriever.exclude_fn(query), where={"outcome": "success"})
    """
    if n <= 0:
        return []
    vector = np.asarray(vector, dtype=np.float32)
    pool: dict[str, "MemoryItem"] = {}
    content: dict[str, float] = {}
    for it, s in store.search(vector, n, namespace, where=where, exclude=exclude):
        pool[it.id] = it
        content[it.id] = float(s)

    tasks = task_index(store, namespace, embedder)
    task_sim = tasks.similarities(vector)
    found = 0
    for j in tasks.ranked(task_sim, n + 16):
        for iid in tasks.members[j]:
            it = store.get(iid, namespace)
            if it is not None and not exclude(it) and matches(it, where):
                pool.setdefault(it.id, it)
                found += 1
        if found >= n:
            break

    missing = [it for i, it in pool.items() if i not in content]
    if missing:
        for it, s in zip(missing, store.vectors(missing) @ vector):
            content[it.id] = float(s)
    out = []
    for i, it in pool.items():
        row = tasks.row.get(i)
        case = float(task_sim[row]) if row is not None else content[i]
        out.append(CaseMatch(it, max(case, content_weight * content[i]), case, content[i]))
    out.sort(key=lambda m: (-m.score, m.item.id))
    return out[:n]

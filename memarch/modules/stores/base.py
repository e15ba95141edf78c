"""The `Store` contract: namespaced records of `MemoryItem`s with add/update/delete/get/list/count,
dense search, and persistence to a directory with atomic writes and identical reload.

Subclasses keep their own index in sync through the ``_index_*`` hooks and may persist extra
state (a FAISS index file, graph edges) through ``_extra_state`` / ``_load_extra``."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable

import dspy
import numpy as np

from memarch.errors import DataError
from memarch.pipeline.files import atomic_write_json, read_json
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.resources import Resources

STATE_FILE = "store.json"
Where = dict[str, Any]


def matches(item: MemoryItem, where: Where | None) -> bool:
    """Structured filter: ``{"kind": "tip", "outcome": ["success", "failure"], "subject": "x"}``.

    Keys name an item attribute, else a key of ``item.fields``; a list value means any-of;
    a callable value is a predicate.
    """
    if not where:
        return True
    for key, want in where.items():
        have = getattr(item, key) if hasattr(item, key) and key != "fields" else item.fields.get(key)
        if callable(want):
            if not want(have):
                return False
        elif isinstance(want, (list, tuple, set, frozenset)):
            if have not in want:
                return False
        elif have != want:
            return False
    return True


class Store(dspy.Module):
    """Base store: items per namespace (user / agent id); namespaces never see each other."""

    name: ClassVar[str] = "base"

    def __init__(self, resources: Resources | None = None, **config: Any):
        super().__init__()
        self.resources = resources or Resources()
        self.config = dict(config)
        self._records: dict[str, dict[str, MemoryItem]] = {}
        self._versions: dict[str, int] = {}
        self._dense_cache: dict[str, tuple[int, list[str], np.ndarray]] = {}

    # -- index hooks (override in subclasses) ----------------------------------------------------
    def _index_add(self, namespace: str, items: list[MemoryItem], vectors: np.ndarray | None) -> None:
        """Called after ``items`` (active) were added or replaced in ``namespace``."""

    def _index_remove(self, namespace: str, item_ids: list[str]) -> None:
        """Called after items stopped being active (deleted or superseded)."""

    def _extra_state(self, directory: Path) -> dict:
        return {}

    def _load_extra(self, state: dict, directory: Path) -> None:
        """Rebuild indexes after a load; default re-adds every active item through ``_index_add``."""
        for ns, recs in self._records.items():
            active = [it for it in recs.values() if it.active]
            if active:
                self._index_add(ns, active, None)

    # -- core API --------------------------------------------------------------------------------
    def _bump(self, namespace: str) -> None:
        self._versions[namespace] = self._versions.get(namespace, 0) + 1

    def version(self, namespace: str = "default") -> int:
        """Changes whenever the namespace changes; retrievers key their caches on it."""
        return self._versions.get(namespace, 0)

    def add(self, items: Iterable[MemoryItem], vectors: np.ndarray | None = None) -> list[str]:
        """Add items (an existing id is replaced). ``vectors``: precomputed embeddings, row per item."""
        items = list(items)
        by_ns: dict[str, list[int]] = {}
        for i, it in enumerate(items):
            by_ns.setdefault(it.namespace, []).append(i)
        for ns, idx in by_ns.items():
            recs = self._records.setdefault(ns, {})
            batch = [items[i] for i in idx]
            replaced = [it.id for it in batch if it.id in recs and recs[it.id].active]
            if replaced:
                self._index_remove(ns, replaced)
            for it in batch:
                recs[it.id] = it
            active_idx = [j for j, it in enumerate(batch) if it.active]
            vecs = None if vectors is None else np.asarray(vectors, dtype=np.float32)[idx][active_idx]
            if active_idx:
                self._index_add(ns, [batch[j] for j in active_idx], vecs)
            self._bump(ns)
        return [it.id for it in items]

    def update(self, item: MemoryItem) -> None:
        """Replace the stored item with the same id (it must exist)."""
        recs = self._records.get(item.namespace, {})
        old = recs.get(item.id)
        if old is None:
            raise KeyError(f"no item {item.id!r} in namespace {item.namespace!r}")
        recs[item.id] = item
        if old.active:
            self._index_remove(item.namespace, [item.id])
        if item.active:
            self._index_add(item.namespace, [item], None)
        self._bump(item.namespace)

    def delete(self, item_id: str, namespace: str = "default", *, reason: str = "deleted",
               actor: str = "store", at: str | None = None, status: str = "deleted",
               related: list[str] | None = None) -> MemoryItem:
        """Tombstone an item: it leaves every index but stays listable with its reason."""
        recs = self._records.get(namespace, {})
        item = recs.get(item_id)
        if item is None:
            raise KeyError(f"no item {item_id!r} in namespace {namespace!r}")
        if item.active:
            item.status = status
            item.log("superseded_by" if status == "superseded" else status, actor, reason, related, at)
            self._index_remove(namespace, [item_id])
            self._bump(namespace)
        return item

    def get(self, item_id: str, namespace: str = "default", *, include_deleted: bool = False) -> MemoryItem | None:
        item = self._records.get(namespace, {}).get(item_id)
        if item is None or (not include_deleted and not item.active):
            return None
        return item

    def list(self, namespace: str = "default", *, include_deleted: bool = False,
             where: Where | None = None) -> list[MemoryItem]:
        recs = self._records.get(namespace, {})
        return [it for it in recs.values() if (include_deleted or it.active) and matches(it, where)]

    def tombstones(self, namespace: str = "default") -> list[MemoryItem]:
        return [it for it in self._records.get(namespace, {}).values() if not it.active]

    def count(self, namespace: str = "default", *, include_deleted: bool = False) -> int:
        recs = self._records.get(namespace, {})
        return len(recs) if include_deleted else sum(1 for it in recs.values() if it.active)

    def namespaces(self) -> list[str]:
        return sorted(self._records)

    # -- dense access ----------------------------------------------------------------------------
    def vectors(self, items: list[MemoryItem]) -> np.ndarray:
        """Embeddings of ``items`` (through the embedder's cache)."""
        return self.resources.embedder.embed([it.text for it in items])

    def _dense_matrix(self, namespace: str) -> tuple[list[str], np.ndarray]:
        ver = self.version(namespace)
        hit = self._dense_cache.get(namespace)
        if hit is not None and hit[0] == ver:
            return hit[1], hit[2]
        items = self.list(namespace)
        mat = self.vectors(items) if items else np.zeros((0, self.resources.embedder.dim), np.float32)
        ids = [it.id for it in items]
        self._dense_cache[namespace] = (ver, ids, mat)
        return ids, mat

    def search(self, vector: np.ndarray, k: int, namespace: str = "default", *,
               where: Where | None = None, exclude: Callable[[MemoryItem], bool] | None = None
               ) -> list[tuple[MemoryItem, float]]:
        """Top-``k`` active items by cosine similarity (brute force here; FAISS in vector stores)."""
        ids, mat = self._dense_matrix(namespace)
        if not ids or k <= 0:
            return []
        scores = mat @ np.asarray(vector, dtype=np.float32)
        order = np.argsort(-scores)
        recs = self._records[namespace]
        out = []
        for j in order:
            it = recs[ids[j]]
            if (exclude is not None and exclude(it)) or not matches(it, where):
                continue
            out.append((it, float(scores[j])))
            if len(out) >= k:
                break
        return out

    # -- persistence -----------------------------------------------------------------------------
    def state(self) -> dict:
        return {"store": self.name, "config": self.config,
                "namespaces": {ns: [it.to_dict() for it in recs.values()] for ns, recs in self._records.items()}}

    def save(self, directory: str | Path) -> None:
        """Write the store to ``directory``: extra index files first, ``store.json`` last (atomic)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        extra = self._extra_state(directory)
        atomic_write_json(directory / STATE_FILE, {**self.state(), "extra": extra})

    def load_state(self, state: dict, directory: Path | None = None) -> None:
        if state.get("store") not in (None, self.name):
            raise DataError(f"saved store is {state.get('store')!r}, not {self.name!r}")
        self._records = {}
        for ns, items in state.get("namespaces", {}).items():
            self._records[ns] = {d["id"]: MemoryItem.from_dict(d) for d in items}
            self._bump(ns)
        self._dense_cache.clear()
        self._load_extra(state.get("extra", {}), directory or Path("."))

    @classmethod
    def load(cls, directory: str | Path, resources: Resources | None = None) -> "Store":
        directory = Path(directory)
        state = read_json(directory / STATE_FILE, what=f"saved {cls.name} store")
        if not isinstance(state, dict) or "namespaces" not in state:
            raise DataError(f"{directory / STATE_FILE}: not a saved memarch store")
        store_cls = cls
        if cls is Store and state.get("store"):  # Store.load(dir): the saved store's own class
            from memarch.pipeline.registry import REGISTRY

            store_cls = REGISTRY.get("store", state["store"]).cls
        store = store_cls(resources, **state.get("config", {}))
        try:
            store.load_state(state, directory)
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"{directory / STATE_FILE}: corrupt saved store ({exc})") from None
        return store

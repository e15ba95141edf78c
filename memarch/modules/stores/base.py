"""The `Store` contract: namespaced records of `MemoryItem`s with add/update/delete/get/list/count,
dense search, and persistence to a directory with atomic writes and identical reload.

Subclasses keep their own index in sync through the ``_index_*`` hooks, may persist extra
state (a FAISS index file, graph edges) through ``_extra_state`` / ``_load_extra``, and add their
state to `Store.state_digest` through ``_digest_parts``."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable, Mapping

import dspy
import numpy as np

from memarch.errors import DataError
from memarch.modules.stores._caches import StoreCaches
from memarch.modules.stores._change_log import ChangeLog
from memarch.modules.stores._dense_rows import DenseRows
from memarch.modules.stores._journal import ChangeJournal
from memarch.modules.stores._record_digests import RecordDigests
from memarch.pipeline.files import atomic_write_json, read_json
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.resources import Resources
from memarch.pipeline.threads import limit_blas_threads

limit_blas_threads()  # dense search is one matvec per query: a second BLAS thread only contends

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


def _where_key(where: Where | None) -> tuple | None:
    """A hashable form of a filter of plain values; None when empty or holding a callable."""
    if not where:
        return None
    key = []
    for name, want in where.items():
        if callable(want):
            return None
        if isinstance(want, (list, tuple, set, frozenset)):
            want = ("any of", type(want).__name__, tuple(sorted(map(repr, want))))
        elif not isinstance(want, (str, int, float, bool, type(None))):
            return None
        key.append((name, want))
    return tuple(key)


class Store(dspy.Module):
    """Base store: items per namespace (user / agent id); namespaces never see each other."""

    name: ClassVar[str] = "base"
    # `state_digest` covers the whole state of exactly the classes that say so in their own body: a
    # subclass inherits the parts but not this, so one that keeps state of its own gets no digest
    # (nothing is shared on its account) until it adds its part and says so.
    _digest_covers_state: ClassVar[bool] = True
    # A store is never called as a module (it has no `forward`), so its attributes skip dspy.Module's
    # Python-level `__getattribute__` (a check of direct `forward` calls): millions of lookups a trial.
    __getattribute__ = object.__getattribute__
    # What the writes since the last drain touched, for an owner that persists them (`log_changes`);
    # None (the class default) for every other store, whose writes then pay one ``is None`` each.
    _change_log: ChangeLog | None = None

    def __init__(self, resources: Resources | None = None, **config: Any):
        super().__init__()
        self.resources = resources or Resources()
        self.config = dict(config)
        self._records: dict[str, dict[str, MemoryItem]] = {}
        self._versions: dict[str, int] = {}
        # namespace -> id -> insertion rank; kept when an item is replaced or tombstoned
        self._positions: dict[str, dict[str, int]] = {}
        self._journal = ChangeJournal()
        self._dense_cache: dict[str, DenseRows] = {}
        self._where_cache: dict[str, dict[tuple, tuple[int, set[str]]]] = {}  # `matching_ids`
        self._record_digests = RecordDigests()  # `state_digest`'s records part, rehashed per change
        self.caches = StoreCaches()  # what the modules derive from this store (indexes...), gone with it

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
    def _bump(self, namespace: str, touched: list[str] | tuple[str, ...] = ()) -> None:
        """A new version of ``namespace``; ``touched``: the items the write added, replaced,
        updated or removed (none for a change no item cache depends on, like a graph edge)."""
        self._versions[namespace] = self._versions.get(namespace, 0) + 1
        ids = list(touched)
        self._journal.record(namespace, self._versions[namespace], ids)
        if self._change_log is not None and ids:
            self._change_log.record(namespace, ids)

    def version(self, namespace: str = "default") -> int:
        """Changes whenever the namespace changes; retrievers key their caches on it."""
        return self._versions.get(namespace, 0)

    def changes_since(self, namespace: str, version: int) -> list[str] | None:
        """Ids of the items touched in ``namespace`` after ``version``, each once; None when that
        is no longer known (a load, or too many writes since): the caller rebuilds its cache."""
        return self._journal.since(namespace, version)

    def position(self, item_id: str, namespace: str = "default") -> int:
        """Insertion rank of ``item_id`` in ``namespace`` (the order of `list`); it survives
        replacement and tombstoning, so indexes updated in place break ties as rebuilt ones do."""
        return self._positions[namespace][item_id]

    def add(self, items: Iterable[MemoryItem], vectors: np.ndarray | None = None) -> list[str]:
        """Add items (an existing id is replaced). ``vectors``: precomputed embeddings, row per item."""
        items = list(items)
        by_ns: dict[str, list[int]] = {}
        for i, it in enumerate(items):
            by_ns.setdefault(it.namespace, []).append(i)
        for ns, idx in by_ns.items():
            recs = self._records.setdefault(ns, {})
            positions = self._positions.setdefault(ns, {})
            batch = [items[i] for i in idx]
            replaced = [it.id for it in batch if it.id in recs and recs[it.id].active]
            if replaced:
                self._index_remove(ns, replaced)
            for it in batch:
                if it.id not in recs:
                    positions[it.id] = len(positions)
                recs[it.id] = it
            active_idx = [j for j, it in enumerate(batch) if it.active]
            vecs = None if vectors is None else np.asarray(vectors, dtype=np.float32)[idx][active_idx]
            if active_idx:
                self._index_add(ns, [batch[j] for j in active_idx], vecs)
            self._bump(ns, [it.id for it in batch])
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
        self._bump(item.namespace, [item.id])

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
            self._bump(namespace, [item_id])
        elif self._change_log is not None:  # a caller may have made it inactive in place: still a change
            self._change_log.record(namespace, [item_id])
        return item

    # -- change log ------------------------------------------------------------------------------
    def log_changes(self) -> ChangeLog:
        """The store's `ChangeLog`, started on the first call: from then on it holds the (namespace,
        id) of every item that `add`, `update` or `delete` is called with until its owner drains it
        (a `Memory` writes those rows to its database). Off by default: a trial's store logs nothing."""
        if self._change_log is None:
            self._change_log = ChangeLog()
        return self._change_log

    def get(self, item_id: str, namespace: str = "default", *, include_deleted: bool = False) -> MemoryItem | None:
        item = self._records.get(namespace, {}).get(item_id)
        if item is None or (not include_deleted and not item.active):
            return None
        return item

    def get_many(self, item_ids: Iterable[str], namespace: str = "default") -> list[MemoryItem | None]:
        """`get` of each id (active items only, else None), in one call: a hot read path's lookup."""
        get = self._records.get(namespace, {}).get
        return [item if (item := get(iid)) is not None and item.status == "active" else None for iid in item_ids]

    def list(self, namespace: str = "default", *, include_deleted: bool = False,
             where: Where | None = None) -> list[MemoryItem]:
        recs = self._records.get(namespace, {})
        if not where:  # the common case, without a call per item
            return list(recs.values()) if include_deleted else [it for it in recs.values() if it.active]
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

    def _dense_rows(self, namespace: str) -> DenseRows:
        """The vectors of the namespace's active items, brought up to date with the few items
        written since the last search (rebuilt only when the journal cannot say which)."""
        rows = self._dense_cache.get(namespace)
        if rows is None or not rows.sync(self, namespace):
            rows = self._dense_cache[namespace] = DenseRows.build(self, namespace)
        return rows

    def matching_ids(self, namespace: str, where: Where | None) -> set[str] | None:
        """Ids of the records (inactive ones too) that ``where`` accepts — ``matches`` of each —
        kept per filter and caught up from the journal; None for no filter or one with a callable
        (not a cache key). A filtered search then asks a set instead of calling ``matches`` per hit:
        a selective filter (``{"outcome": "success"}`` on a conversation) walks the whole index."""
        key = _where_key(where)
        if key is None:
            return None
        cache = self._where_cache.setdefault(namespace, {})
        version, recs = self.version(namespace), self._records.get(namespace, {})
        got = cache.get(key)
        if got is not None and got[0] == version:
            return got[1]
        touched = self.changes_since(namespace, got[0]) if got is not None else None
        if touched is None:
            ids = {iid for iid, it in recs.items() if matches(it, where)}
        else:
            ids = got[1]
            for iid in touched:
                it = recs.get(iid)
                if it is not None and matches(it, where):
                    ids.add(iid)
                else:
                    ids.discard(iid)
        cache[key] = (version, ids)
        return ids

    def search(self, vector: np.ndarray, k: int, namespace: str = "default", *,
               where: Where | None = None, exclude: Callable[[MemoryItem], bool] | None = None
               ) -> list[tuple[MemoryItem, float]]:
        """Top-``k`` active items by cosine similarity, ties in insertion order (brute force
        here; FAISS in vector stores)."""
        if k <= 0 or not self._records.get(namespace):
            return []
        recs = self._records[namespace]
        allowed = self.matching_ids(namespace, where) if where else None
        if allowed is not None and not allowed:
            return []
        out = []
        for iid, score in self._dense_rows(namespace).ranked(vector):
            if allowed is not None:
                if iid not in allowed:
                    continue
            elif where and not matches(recs[iid], where):
                continue
            it = recs[iid]
            if exclude is not None and exclude(it):
                continue
            out.append((it, score))
            if len(out) >= k:
                break
        return out

    def search_many(self, vectors: np.ndarray, k: int, namespace: str = "default", *,
                    exclude: Callable[[MemoryItem], bool] | None = None,
                    min_score: float | None = None) -> list[list[tuple[MemoryItem, float]]]:
        """`search` of each row of ``vectors`` now (a store may answer them in one batch);
        ``min_score``: only the hits of those ``k`` that score at least it (a store may stop
        looking at the first hit below it)."""
        rows = [self.search(v, k, namespace, exclude=exclude) for v in vectors]
        if min_score is None:
            return rows
        return [[h for h in row if not h[1] < min_score] for row in rows]

    # -- state digest ----------------------------------------------------------------------------
    def state_digest(self, namespace: str = "default", *,
                     actors: Mapping[str, str] | None = None) -> dict[str, Any] | None:
        """Everything a read of ``namespace`` can observe, as named parts of plain values (str,
        numbers, bool, None, lists, tuples, dicts) to hash at once (they hold live objects):
        ``records`` (the sha256 of every record's state — usage and lineage included, inactive
        records too — in storage order; `RecordDigests` rehashes only the records changed since
        the last digest), then each subclass's own index state. Equal parts, equal reads. None when
        this class does not say its parts cover all its state (a subclass with state of its own).
        Raises ValueError when a record holds a value that is not plain.

        Example::

            parts = store.state_digest("alice", actors={"manager:lightweight": "manager:*"})
            list(parts)                     # ["records", "dense"] for a `vector` store

        Args:
            namespace: the namespace (reads never cross namespaces).
            actors: lineage actors written under another name, so memories that differ only in
                who wrote them give equal parts.
        """
        if not vars(type(self)).get("_digest_covers_state", False):
            return None
        return self._digest_parts(namespace, actors or {})

    def _digest_parts(self, namespace: str, actors: Mapping[str, str]) -> dict[str, Any]:
        """The parts of `state_digest` up to this class; a subclass adds its own after ``super()``'s."""
        return {"records": self._record_digests.of(self._records.get(namespace, {}), namespace,
                                                   self.version(namespace), self.changes_since, actors)}

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
        before = set(self._records)
        self._records, self._positions = {}, {}
        for ns, items in state.get("namespaces", {}).items():
            self._records[ns] = {d["id"]: MemoryItem.from_dict(d) for d in items}
            self._positions[ns] = {iid: j for j, iid in enumerate(self._records[ns])}
        for ns in before | set(self._records):  # a namespace the load dropped changes too
            self._bump(ns)
            self._journal.reset(ns, self.version(ns))
        self._dense_cache.clear()
        self._where_cache.clear()
        self._record_digests.clear()
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

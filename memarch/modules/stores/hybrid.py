"""`hybrid` store: records are the source of truth, with a FAISS index and posting lists over
structured fields, so filtered vector search pre-filters when the filter is selective."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, ClassVar, Hashable, Mapping

import numpy as np

from memarch.modules.stores.base import Where, matches
from memarch.modules.stores.vector import VectorStore
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.registry import register
from memarch.pipeline.resources import Resources

DEFAULT_INDEXED = ("kind", "outcome", "episode_id", "key", "task")


def _value(item: MemoryItem, key: str) -> Any:
    # Mirrors `matches`: an item attribute, else a key of ``item.fields``.
    return getattr(item, key) if hasattr(item, key) and key != "fields" else item.fields.get(key)


def _hashable(value: Any) -> bool:
    return isinstance(value, Hashable) and not isinstance(value, tuple)


@register("store", "hybrid", rank=3, needs_embeddings=True,
          description="records as source of truth + FAISS index + structured filters")
class HybridStore(VectorStore):
    """A vector store that also answers structured filters from posting lists.

    Example::

        store = HybridStore(resources)
        store.add(items)
        store.filter({"kind": "insight", "outcome": "failure"}, namespace="alice")
        store.search(query_vector, k=4, namespace="alice", where={"kind": ["tip", "workflow"]})

    Args:
        indexed_fields: keys with posting lists (item attributes or ``fields`` keys);
            default kind, outcome, episode_id, key, task.
        prefilter_max: a filter matching at most this many items is searched exactly over
            that subset (default 4096); larger ones over-fetch from FAISS.
        (plus the ``vector`` store's index / ivf_min_items / nprobe)
    """

    # Its own state is the posting lists (`_digest_parts`); ``_posted`` is their reverse
    _digest_covers_state: ClassVar[bool] = True

    def __init__(self, resources: Resources | None = None, **config: Any):
        super().__init__(resources, **config)
        self.indexed_fields = tuple(config.get("indexed_fields", DEFAULT_INDEXED))
        self.prefilter_max = int(config.get("prefilter_max", 4096))
        # namespace -> field -> value -> active item ids
        self._postings: dict[str, dict[str, dict[Any, set[str]]]] = {}
        # namespace -> field -> ids whose value cannot be a dict key (always candidates)
        self._loose: dict[str, dict[str, set[str]]] = {}
        # namespace -> id -> the (field, value) lists it sits in, so removal is exact and cheap
        self._posted: dict[str, dict[str, list[tuple[str, Any]]]] = {}

    # -- posting lists ----------------------------------------------------------------------------
    def _activate(self, namespace: str, items: list[MemoryItem], vectors: np.ndarray) -> None:
        super()._activate(namespace, items, vectors)
        self._post(namespace, items)

    def _post(self, namespace: str, items: list[MemoryItem]) -> None:
        post = self._postings.setdefault(namespace, {f: {} for f in self.indexed_fields})
        loose = self._loose.setdefault(namespace, {f: set() for f in self.indexed_fields})
        posted = self._posted.setdefault(namespace, {})
        for it in items:
            where_posted = []
            for f in self.indexed_fields:
                v = _value(it, f)
                if _hashable(v):
                    post[f].setdefault(v, set()).add(it.id)
                    where_posted.append((f, v))
                else:
                    loose[f].add(it.id)
            posted[it.id] = where_posted

    def _refresh(self, namespace: str, items: list[MemoryItem]) -> None:
        super()._refresh(namespace, items)
        self._unpost(namespace, [it.id for it in items])
        self._post(namespace, items)

    def _deactivate(self, namespace: str, item_ids: list[str]) -> None:
        super()._deactivate(namespace, item_ids)
        self._unpost(namespace, item_ids)

    def _unpost(self, namespace: str, item_ids: list[str]) -> None:
        post, loose = self._postings.get(namespace, {}), self._loose.get(namespace, {})
        posted = self._posted.get(namespace, {})
        for iid in item_ids:
            # What was posted, not the record: on update the record already holds the new version.
            for f, v in posted.pop(iid, ()):
                ids = post[f].get(v)
                if ids is not None:
                    ids.discard(iid)
                    if not ids:
                        del post[f][v]
            for ids in loose.values():
                ids.discard(iid)

    def _load_extra(self, state: dict, directory: Path) -> None:
        super()._load_extra(state, directory)
        # Posting lists are derived from the records, never saved: rebuild them.
        self._postings, self._loose, self._posted = {}, {}, {}
        for ns, recs in self._records.items():
            self._post(ns, [it for it in recs.values() if it.active])

    def _digest_parts(self, namespace: str, actors: Mapping[str, str]) -> dict[str, Any]:
        parts = super()._digest_parts(namespace, actors)
        post, loose = self._postings.get(namespace, {}), self._loose.get(namespace, {})
        # Sets as sorted lists and values as their repr (any hashable value may be posted): plain
        # values in an order that does not depend on hashing.
        parts["postings"] = ([(f, sorted((repr(v), sorted(ids)) for v, ids in values.items()))
                              for f, values in post.items()],
                             [(f, sorted(ids)) for f, ids in loose.items()])
        return parts

    def _candidates(self, where: Where, namespace: str) -> set[str] | None:
        """Active ids that may match ``where`` from the posting lists, or None if no key is indexed."""
        post, loose = self._postings.get(namespace, {}), self._loose.get(namespace, {})
        out: set[str] | None = None
        for key, want in where.items():
            if key not in post or callable(want):
                continue
            wants = list(want) if isinstance(want, (list, tuple, set, frozenset)) else [want]
            if not all(_hashable(w) for w in wants):
                continue
            ids = set(loose.get(key, ()))
            for w in wants:
                ids |= post[key].get(w, set())
            out = ids if out is None else out & ids
            if not out:
                return out
        return out

    # -- structured access ------------------------------------------------------------------------
    def filter(self, where: Where | None, namespace: str = "default") -> list[MemoryItem]:
        """Active items of ``namespace`` matching ``where`` (see `matches`), in insertion order."""
        if not where:
            return self.list(namespace)
        recs = self._records.get(namespace, {})
        cands = self._candidates(where, namespace)
        if cands is None:
            return self.list(namespace, where=where)
        return [it for iid, it in recs.items() if iid in cands and it.active and matches(it, where)]

    # Without ``where`` its `search` is `VectorStore.search`: `search_many` may batch it.
    _unfiltered_search_is_vector: ClassVar[bool] = True

    def search(self, vector: np.ndarray, k: int, namespace: str = "default", *,
               where: Where | None = None, exclude: Callable[[MemoryItem], bool] | None = None
               ) -> list[tuple[MemoryItem, float]]:
        """Filtered vector search: exact over the subset when the filter is selective, else
        FAISS with over-fetch."""
        index = self._indexes.get(namespace)
        if index is None or k <= 0 or not len(index):
            return []
        cands = self._candidates(where, namespace) if where else None
        if cands is None or len(cands) > self.prefilter_max:
            return super().search(vector, k, namespace, where=where, exclude=exclude)
        recs = self._records[namespace]
        subset = [i for i in cands if matches(recs[i], where) and (exclude is None or not exclude(recs[i]))]
        subset.sort()  # set order varies between runs; results must not
        return [(recs[i], s) for i, s in index.search_subset(vector, subset, k)]

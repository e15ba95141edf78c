"""`vector` store: records plus one FAISS index per namespace (flat, or IVF once large), with
delete/update through ``remove_ids`` and the index persisted next to ``store.json``."""
from __future__ import annotations

import hashlib
import logging
import uuid
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable, Mapping

import numpy as np

from memarch.modules.stores.activity import NotActiveIn
from memarch.modules.stores._faiss_index import DenseIndex
from memarch.modules.stores.base import Store, Where, matches
from memarch.pipeline.files import atomic_write_bytes
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.registry import register
from memarch.pipeline.resources import Resources

logger = logging.getLogger(__name__)

INDEX_GLOB = "dense-*.faiss"


@register("store", "vector", rank=2, needs_embeddings=True,
          description="FAISS (flat or IVF) index per namespace + item metadata")
class VectorStore(Store):
    """Items with a FAISS inner-product index per namespace; ``search`` runs in FAISS.

    Example::

        store = VectorStore(resources)                 # index="flat"
        store.add(items, vectors=precomputed)          # or let the embedder embed item.text
        store.search(query_vector, k=4, namespace="alice", where={"kind": "tip"})
        store.save("bank/"); VectorStore.load("bank/", resources)

    Args:
        resources: the embedder used when ``add`` gets no vectors.
        index: ``"flat"`` (exact) or ``"ivf"`` (exact below ``ivf_min_items``, IVF above).
        ivf_min_items: namespace size at which an ``"ivf"`` index is trained (default 20000).
        nprobe: IVF lists visited per query (default 16).
    """

    # Its own state is the dense index (`_digest_parts`); the indexed texts' hashes follow from the
    # records and the index, and ``_keep`` / ``_saved_files`` never outlive a write or a save
    _digest_covers_state: ClassVar[bool] = True

    def __init__(self, resources: Resources | None = None, **config: Any):
        super().__init__(resources, **config)
        self.index_kind = str(config.get("index", "flat"))
        self.ivf_min_items = int(config.get("ivf_min_items", 20000))
        self.nprobe = int(config.get("nprobe", 16))
        DenseIndex(1, self.index_kind)  # fail on a bad ``index`` value now, not on the first add
        self._indexes: dict[str, DenseIndex] = {}
        # (namespace, id) of items re-stored with unchanged text: their vectors stay where they are,
        # so an update of usage or lineage costs no FAISS work and keeps precomputed vectors.
        self._keep: set[tuple[str, str]] = set()
        self._saved_files: set[str] = set()
        # namespace -> id -> hash of the text whose vector is indexed (rebuilt on load)
        self._indexed_text: dict[str, dict[str, int]] = {}

    # -- write path -------------------------------------------------------------------------------
    def _unchanged(self, item: MemoryItem) -> bool:
        # Against the text that was indexed, not the record: a caller may have edited the stored
        # object in place before calling update().
        indexed = self._indexed_text.get(item.namespace, {}).get(item.id)
        return item.active and indexed is not None and indexed == hash(item.text)

    def add(self, items: Iterable[MemoryItem], vectors: np.ndarray | None = None) -> list[str]:
        items = list(items)
        if vectors is None:
            self._keep = {(it.namespace, it.id) for it in items if self._unchanged(it)}
        try:
            out = super().add(items, vectors)
        finally:
            self._keep = set()
        self._drop_stale(items)
        return out

    def update(self, item: MemoryItem) -> None:
        self._keep = {(item.namespace, item.id)} if self._unchanged(item) else set()
        try:
            super().update(item)
        finally:
            self._keep = set()
        self._drop_stale([item])

    def _drop_stale(self, items: list[MemoryItem]) -> None:
        """Items made inactive in place (status set on the stored object itself) still sit in the
        index, since the base class saw no active -> inactive change: take them out now."""
        for it in items:
            if not it.active and it.id in self._indexed_text.get(it.namespace, {}):
                self._deactivate(it.namespace, [it.id])

    def _index_add(self, namespace: str, items: list[MemoryItem], vectors: np.ndarray | None) -> None:
        fresh = [j for j, it in enumerate(items) if (namespace, it.id) not in self._keep]
        if len(fresh) < len(items):
            self._refresh(namespace, [it for it in items if (namespace, it.id) in self._keep])
        if not fresh:
            return
        batch = [items[j] for j in fresh]
        vecs = (self.resources.embedder.embed([it.text for it in batch]) if vectors is None
                else np.asarray(vectors, dtype=np.float32)[fresh])
        self._activate(namespace, batch, vecs)

    def _index_remove(self, namespace: str, item_ids: list[str]) -> None:
        gone = [i for i in item_ids if (namespace, i) not in self._keep]
        if gone:
            self._deactivate(namespace, gone)

    def _activate(self, namespace: str, items: list[MemoryItem], vectors: np.ndarray) -> None:
        """``items`` became active with these vectors (subclasses extend: graph edges)."""
        index = self._indexes.get(namespace)
        if index is None:
            index = self._indexes[namespace] = DenseIndex(
                vectors.shape[1], self.index_kind, ivf_min_items=self.ivf_min_items, nprobe=self.nprobe)
        index.add([it.id for it in items], vectors)
        texts = self._indexed_text.setdefault(namespace, {})
        for it in items:
            texts[it.id] = hash(it.text)

    def _refresh(self, namespace: str, items: list[MemoryItem]) -> None:
        """``items`` were re-stored with unchanged text and stay active: the vector stays put;
        subclasses refresh what they derive from other fields."""

    def _deactivate(self, namespace: str, item_ids: list[str]) -> None:
        """``item_ids`` stopped being active (deleted, superseded, or replaced by new text)."""
        index = self._indexes.get(namespace)
        if index is not None:
            index.remove(item_ids)
        texts = self._indexed_text.get(namespace, {})
        for iid in item_ids:
            texts.pop(iid, None)

    # -- dense access -----------------------------------------------------------------------------
    def vectors(self, items: list[MemoryItem]) -> np.ndarray:
        """Stored vectors where the index has them (precomputed ones included), else embeddings."""
        if not items:
            return np.zeros((0, self.resources.embedder.dim), np.float32)
        found: dict[str, list[int]] = {}
        missing: list[int] = []
        for j, it in enumerate(items):
            index = self._indexes.get(it.namespace)
            if index is not None and it.id in index:
                found.setdefault(it.namespace, []).append(j)
            else:
                missing.append(j)
        out: np.ndarray | None = None
        for ns, rows in found.items():
            vecs = self._indexes[ns].vectors([items[j].id for j in rows])
            if out is None:
                out = np.empty((len(items), vecs.shape[1]), np.float32)
            out[rows] = vecs
        if missing:
            vecs = self.resources.embedder.embed([items[j].text for j in missing])
            if out is None:
                out = np.empty((len(items), vecs.shape[1]), np.float32)
            out[missing] = vecs
        return out

    def search(self, vector: np.ndarray, k: int, namespace: str = "default", *,
               where: Where | None = None, exclude: Callable[[MemoryItem], bool] | None = None
               ) -> list[tuple[MemoryItem, float]]:
        """Top-``k`` by cosine in FAISS; with a filter, over-fetch until ``k`` survive it."""
        index = self._indexes.get(namespace)
        if index is None or k <= 0 or not len(index):
            return []
        recs = self._records[namespace]
        if not where and exclude is None:
            return [(recs[i], s) for i, s in index.search(vector, k)]
        exclude = _unless_spared(exclude, namespace)
        allowed = self.matching_ids(namespace, where) if where else None
        if allowed is not None and not allowed:
            return []
        return self._filtered_search(index, recs, vector, k, where, exclude, allowed)

    def search_many(self, vectors: np.ndarray, k: int, namespace: str = "default", *,
                    exclude: Callable[[MemoryItem], bool] | None = None,
                    min_score: float | None = None) -> list[list[tuple[MemoryItem, float]]]:
        """`search` of each row (with ``exclude``), the rows' first FAISS fetch in one call: what a
        manager's near-duplicate check of a written batch asks, row by row, of an unchanged store.
        ``min_score``: a row's walk stops at its first hit below it (hits come best first)."""
        index = self._indexes.get(namespace)
        # Only where an unfiltered `search` is this class's (a subclass overriding it says so in its body)
        plain = type(self).search is VectorStore.search or vars(type(self)).get("_unfiltered_search_is_vector", False)
        if not plain or index is None or k <= 0 or not len(index) or exclude is None:
            return super().search_many(vectors, k, namespace, exclude=exclude, min_score=min_score)
        recs = self._records[namespace]
        exclude = _unless_spared(exclude, namespace)
        fetch = max(2 * k, k + 32)
        out = []
        for vector, (scores, ints) in zip(vectors, index.hits_many(vectors, fetch)):
            got, done = self._walk(index, recs, scores, ints, k, None, exclude, None, {}, min_score)
            if not (done or fetch >= len(index)):
                got = self._filtered_search(index, recs, vector, k, None, exclude)
                if min_score is not None:
                    got = [h for h in got if not h[1] < min_score]
            out.append(got)
        return out

    @staticmethod
    def _filtered_search(index: DenseIndex, recs: dict[str, MemoryItem], vector: np.ndarray, k: int,
                         where: Where | None, exclude: Callable[[MemoryItem], bool] | None,
                         allowed: set[str] | None = None) -> list[tuple[MemoryItem, float]]:
        fetch = max(2 * k, k + 32)
        kept: dict[str, bool] = {}  # the filter's verdicts: a longer fetch does not ask again
        while True:
            scores, ints = index.hits(vector, fetch)
            out, done = VectorStore._walk(index, recs, scores, ints, k, where, exclude, allowed, kept)
            if done or fetch >= len(index):
                return out
            fetch *= 4

    @staticmethod
    def _walk(index: DenseIndex, recs: dict[str, MemoryItem], scores: list[float], ints: list[int], k: int,
              where: Where | None, exclude: Callable[[MemoryItem], bool] | None, allowed: set[str] | None,
              kept: dict[str, bool], min_score: float | None = None) -> tuple[list[tuple[MemoryItem, float]], bool]:
        """The hits of one fetch that pass the filter, best first, up to ``k``; and whether ``k`` did.
        ``min_score``: the walk ends (done) at the first hit below it, which no later hit beats."""
        out: list[tuple[MemoryItem, float]] = []
        to_item = index.to_item
        if exclude is None and not where and allowed is None:  # every hit survives
            for s, n in zip(scores, ints):
                if n < 0:
                    break
                if min_score is not None and s < min_score:
                    return out, True
                out.append((recs[to_item[n]], s))
                if len(out) == k:
                    return out, True
            return out, False
        for s, n in zip(scores, ints):  # best first: stop at the k-th survivor
            if n < 0:
                break
            if min_score is not None and s < min_score:
                return out, True
            i = to_item[n]
            ok = kept.get(i)
            if ok is None:
                it = recs[i]
                if allowed is not None:  # `matches`, as the store's cached set of ids says
                    ok = i in allowed and (exclude is None or not exclude(it))
                else:
                    ok = (exclude is None or not exclude(it)) and (not where or matches(it, where))
                kept[i] = ok
            if ok:
                out.append((recs[i], s))
                if len(out) == k:
                    return out, True
        return out, False

    # -- state digest -----------------------------------------------------------------------------
    def _digest_parts(self, namespace: str, actors: Mapping[str, str]) -> dict[str, Any]:
        parts = super()._digest_parts(namespace, actors)
        index = self._indexes.get(namespace)
        # The serialised FAISS index holds the vectors in storage order (ties in search follow it)
        # and, once IVF, its trained lists; with the id of every vector (`DenseIndex.state_digest`).
        parts["dense"] = () if index is None else index.state_digest()
        return parts

    # -- persistence ------------------------------------------------------------------------------
    def _extra_state(self, directory: Path) -> dict:
        """Write each namespace's index to a fresh file (atomic); ``store.json`` then points at it."""
        dense: dict[str, dict] = {}
        save_id = uuid.uuid4().hex[:12]  # one per save: a save never overwrites the files in use
        self._saved_files = set()
        for ns, index in self._indexes.items():
            name = f"dense-{hashlib.sha1(ns.encode()).hexdigest()[:10]}-{save_id}.faiss"
            atomic_write_bytes(directory / name, index.to_bytes())
            self._saved_files.add(name)
            dense[ns] = {"file": name, **index.meta()}
        return {"dense": dense}

    def save(self, directory: str | Path) -> None:
        """Save, then drop index files of earlier saves (only once the new ``store.json`` is in place,
        so a crash mid-save leaves the previous save loadable)."""
        directory = Path(directory)
        super().save(directory)
        for path in directory.glob(INDEX_GLOB):
            if path.name not in self._saved_files:
                path.unlink(missing_ok=True)

    def _load_extra(self, state: dict, directory: Path) -> None:
        self._indexes, self._indexed_text = {}, {}
        dense = state.get("dense", {})
        for ns, recs in self._records.items():
            active = [it for it in recs.values() if it.active]
            index = self._read_index(dense.get(ns), directory, {it.id for it in active}, ns)
            if index is not None:
                self._indexes[ns] = index
                self._indexed_text[ns] = {it.id: hash(it.text) for it in active}
            elif active:
                # Only the dense index: what subclasses derive (graph edges and their learned
                # weights) was loaded from store.json and must not be rebuilt.
                VectorStore._activate(self, ns, active, self.resources.embedder.embed([it.text for it in active]))

    def _read_index(self, meta: dict | None, directory: Path, active_ids: set[str], ns: str) -> DenseIndex | None:
        if not meta:
            return None
        if not (directory / meta["file"]).exists():
            # Expected when only store.json travelled (a MemoryProgram saves memory inline):
            # vectors come back from the embedder and its cache.
            logger.info("namespace %r: no saved FAISS index next to store.json; re-embedding", ns)
            return None
        try:
            index = DenseIndex.from_saved((directory / meta["file"]).read_bytes(), meta,
                                          ivf_min_items=self.ivf_min_items, nprobe=self.nprobe)
        except (OSError, KeyError, ValueError, RuntimeError) as exc:
            logger.warning("namespace %r: saved FAISS index unreadable (%s); re-embedding", ns, exc)
            return None
        if set(index.ids()) != active_ids:
            logger.warning("namespace %r: saved FAISS index does not match the records; re-embedding", ns)
            return None
        return index


def _unless_spared(exclude: Callable[[MemoryItem], bool] | None, namespace: str) -> Callable[[MemoryItem], bool] | None:
    """None for an ``exclude`` that rejects nothing the namespace's index holds (`NotActiveIn` of
    that namespace: the index holds its active items only), so the walk does not call it per hit;
    the hits, fetched as for any filter, are the same."""
    return None if isinstance(exclude, NotActiveIn) and exclude.spares(namespace) else exclude

"""`DenseIndex`: one namespace's FAISS index keyed by item id — exact inner product (flat) that turns
into IVF when it grows large, with remove/reconstruct and byte-exact serialisation."""
from __future__ import annotations

import hashlib
import logging
import math
import os

import faiss
import numpy as np

from memarch.pipeline.threads import limit_blas_threads

logger = logging.getLogger(__name__)

# Per-namespace indexes are small and searched one query at a time: OpenMP threads only contend
# (measured: 58 ms vs 7 ms p95 at 100k on 2 busy cores). MEMARCH_FAISS_THREADS overrides.
faiss.omp_set_num_threads(int(os.environ.get("MEMARCH_FAISS_THREADS", "1")))
limit_blas_threads()  # FAISS ships its own OpenBLAS; same reason (memarch/pipeline/threads.py)

INDEX_KINDS = ("flat", "ivf")


class DenseIndex:
    """Cosine search over unit vectors, addressed by item id (FAISS wants int64 ids).

    Example::

        index = DenseIndex(384)
        index.add(["tip-1", "tip-2"], vectors)
        index.search(query_vector, k=1)     # [("tip-1", 0.93)]
        index.remove(["tip-1"])

    Args:
        dim: vector dimension.
        kind: ``"flat"`` (exact) or ``"ivf"``: exact until ``ivf_min_items`` vectors, then an
            IVF index trained on what is there (approximate, ``nprobe`` lists per query).
        ivf_min_items: size at which an ``"ivf"`` index is trained.
        nprobe: IVF lists visited per query.
    """

    def __init__(self, dim: int, kind: str = "flat", *, ivf_min_items: int = 20000, nprobe: int = 16):
        if kind not in INDEX_KINDS:
            raise ValueError(f"index must be one of {INDEX_KINDS}, got {kind!r}")
        self.dim = int(dim)
        self.kind = kind
        self.ivf_min_items = int(ivf_min_items)
        self.nprobe = int(nprobe)
        self.index: faiss.Index = faiss.IndexIDMap2(faiss.IndexFlatIP(self.dim))
        self.is_ivf = False
        self.to_int: dict[str, int] = {}
        self.to_item: dict[int, str] = {}
        self.next_id = 0
        self._changes = 0  # every add, remove and IVF switch: what `digest` is remembered against
        self._digest: tuple[int, str] | None = None
        self._state_digest: tuple[int, str] | None = None  # (change count, `state_digest`)
        self._row_hash: dict[int, bytes] = {}  # int id -> hash of its vector (flat: `digest`'s parts)

    def __len__(self) -> int:
        return len(self.to_int)

    def __contains__(self, item_id: str) -> bool:
        return item_id in self.to_int

    def ids(self) -> list[str]:
        return list(self.to_int)

    # -- writes -----------------------------------------------------------------------------------
    def add(self, item_ids: list[str], vectors: np.ndarray) -> None:
        """Add (or replace) vectors; ids already present are removed first."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(item_ids), self.dim)
        present = [i for i in item_ids if i in self.to_int]
        if present:
            self.remove(present)
        # A batch may repeat an id: the last row wins, as it would for sequential adds.
        last = {iid: row for row, iid in enumerate(item_ids)}
        if len(last) != len(item_ids):
            item_ids = list(last)
            vectors = vectors[list(last.values())]
        ints = np.arange(self.next_id, self.next_id + len(item_ids), dtype=np.int64)
        self.next_id += len(item_ids)
        for iid, n in zip(item_ids, ints.tolist()):
            self.to_int[iid] = n
            self.to_item[n] = iid
        self.index.add_with_ids(vectors, ints)
        self._changes += 1
        if self.kind == "ivf" and not self.is_ivf and len(self) >= self.ivf_min_items:
            self._train_ivf()

    def remove(self, item_ids: list[str]) -> None:
        ints = [self.to_int.pop(i) for i in item_ids if i in self.to_int]
        for n in ints:
            del self.to_item[n]
            self._row_hash.pop(n, None)
        if ints:
            self.index.remove_ids(np.asarray(ints, dtype=np.int64))
            self._changes += 1

    def _train_ivf(self) -> None:
        """Swap the exact index for an IVF one trained on the current vectors (same int ids)."""
        ints = np.asarray(sorted(self.to_item), dtype=np.int64)
        vectors = self.index.reconstruct_batch(ints)
        # k-means wants >= 39 points per list (FAISS warns below that); 40 per list is enough.
        nlist = max(8, min(4096, int(4 * math.sqrt(len(ints))), len(ints) // 40))
        rng = np.random.default_rng(0)
        sample = vectors[rng.choice(len(vectors), min(len(vectors), 40 * nlist), replace=False)]
        quantizer = faiss.IndexFlatIP(self.dim)
        ivf = faiss.IndexIVFFlat(quantizer, self.dim, nlist, faiss.METRIC_INNER_PRODUCT)
        ivf.train(sample)
        # A hashtable direct map keeps reconstruct() and remove_ids() working on the IVF index.
        ivf.set_direct_map_type(faiss.DirectMap.Hashtable)
        ivf.nprobe = self.nprobe
        ivf.add_with_ids(vectors, ints)
        self.index, self.is_ivf = ivf, True
        self._changes += 1
        logger.info("dense index switched to IVF (%d lists) at %d vectors", nlist, len(ints))

    # -- reads ------------------------------------------------------------------------------------
    def vector(self, item_id: str) -> np.ndarray | None:
        n = self.to_int.get(item_id)
        return None if n is None else self.index.reconstruct(n)

    def vectors(self, item_ids: list[str]) -> np.ndarray:
        """Rows for ``item_ids`` (all must be present)."""
        if not item_ids:
            return np.zeros((0, self.dim), np.float32)
        return self.index.reconstruct_batch(np.asarray([self.to_int[i] for i in item_ids], dtype=np.int64))

    def search(self, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        scores, ints = self.hits(vector, k)
        to_item = self.to_item
        return [(to_item[n], s) for s, n in zip(scores, ints) if n >= 0]

    def hits(self, vector: np.ndarray, k: int) -> tuple[list[float], list[int]]:
        """`search` of one vector before the ids are looked up: the scores and the index's integer
        ids (-1 past the end), best first — what a filtered search walks until enough survive."""
        k = min(int(k), len(self))
        if k <= 0:
            return [], []
        x = np.ascontiguousarray(np.asarray(vector, dtype=np.float32).reshape(1, -1))
        if x.shape[1] != self.dim:  # the wrapper's check: the C call would read past the vector
            raise ValueError(f"a {x.shape[1]}-dimensional query for a {self.dim}-dimensional index")
        scores, ints = np.empty((1, k), np.float32), np.empty((1, k), np.int64)
        # FAISS's own search without its Python wrapper's checks (one call per read adds up)
        self.index.search_c(1, faiss.swig_ptr(x), k, faiss.swig_ptr(scores), faiss.swig_ptr(ints), None)
        return scores[0].tolist(), ints[0].tolist()

    def hits_many(self, vectors: np.ndarray, k: int) -> list[tuple[list[float], list[int]]]:
        """`hits` of each row, in FAISS calls of fewer rows than its BLAS threshold: FAISS then
        scores each row on its own exactly as a one-row search does (a BLAS product, which it uses
        for more rows, may differ in the last bits)."""
        k = min(int(k), len(self))
        x = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32).reshape(-1, self.dim))
        if k <= 0:
            return [([], []) for _ in range(len(x))]
        step = max(1, min(int(faiss.cvar.distance_compute_blas_threshold) - 1, 256))
        out: list[tuple[list[float], list[int]]] = []
        for a in range(0, len(x), step):
            rows = x[a:a + step]
            scores, ints = np.empty((len(rows), k), np.float32), np.empty((len(rows), k), np.int64)
            self.index.search_c(len(rows), faiss.swig_ptr(rows), k, faiss.swig_ptr(scores), faiss.swig_ptr(ints), None)
            out.extend(zip(scores.tolist(), ints.tolist()))
        return out

    def search_many(self, vectors: np.ndarray, k: int, *, nprobe: int | None = None) -> list[list[tuple[str, float]]]:
        """Top-``k`` per row; ``nprobe`` overrides the IVF lists visited (ignored while exact)."""
        k = min(int(k), len(self))
        if k <= 0:
            return [[] for _ in range(len(vectors))]
        params = faiss.SearchParametersIVF(nprobe=int(nprobe)) if nprobe and self.is_ivf else None
        scores, ints = self.index.search(np.ascontiguousarray(vectors, dtype=np.float32), k, params=params)
        return [[(self.to_item[n], float(s)) for s, n in zip(srow, irow) if n >= 0]
                for srow, irow in zip(scores.tolist(), ints.tolist())]

    def search_subset(self, vector: np.ndarray, item_ids: list[str], k: int) -> list[tuple[str, float]]:
        """Exact top-``k`` among ``item_ids`` only (the pre-filtered path of a selective filter)."""
        ids = [i for i in item_ids if i in self.to_int]
        if not ids or k <= 0:
            return []
        scores = self.vectors(ids) @ np.asarray(vector, dtype=np.float32)
        top = np.argsort(-scores, kind="stable")[:k]
        return [(ids[j], float(scores[j])) for j in top]

    def digest(self) -> str:
        """A sha256 that differs whenever `to_bytes` does for the same ids: the vectors in storage
        order, and once IVF its trained lists. Remembered until the next add, remove or IVF switch,
        and for a flat index built from each vector's own hash, made once per vector: a state digest
        at every read point neither serialises nor rehashes an unchanged index. A flat index keeps
        its vectors in the order of their integer ids (ids only grow; a removal keeps the order), so
        the hashes walked in that order stand for the serialised vectors."""
        if self._digest is None or self._digest[0] != self._changes:
            if self.is_ivf:
                value = "ivf:" + hashlib.sha256(self.to_bytes()).hexdigest()
            else:
                rows = self._row_hash
                missing = [n for n in self.to_item if n not in rows]
                if missing:
                    vecs = self.index.reconstruct_batch(np.asarray(missing, dtype=np.int64))
                    for n, row in zip(missing, vecs):
                        rows[n] = hashlib.blake2b(row.tobytes(), digest_size=16).digest()
                value = "flat:" + hashlib.sha256(b"".join(rows[n] for n in self.to_item)).hexdigest()
            self._digest = (self._changes, value)
        return self._digest[1]

    def state_digest(self) -> str:
        """A sha256 of everything a search can observe: the kind, whether IVF, the next integer id,
        the item id of every integer id (in insertion order) and `digest` (the vectors). Remembered
        until the next add, remove or IVF switch: a landscape asks at every read point."""
        held = self._state_digest
        if held is None or held[0] != self._changes:
            h = hashlib.sha256(repr((self.kind, self.is_ivf, self.next_id)).encode())
            for iid, n in self.to_int.items():
                h.update(f"{len(iid)}:{iid}:{n};".encode())
            h.update(self.digest().encode())
            held = self._state_digest = (self._changes, h.hexdigest())
        return held[1]

    # -- persistence ------------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        return faiss.serialize_index(self.index).tobytes()

    def meta(self) -> dict:
        return {"dim": self.dim, "kind": self.kind, "ivf": self.is_ivf, "next_id": self.next_id,
                "ids": [[n, iid] for iid, n in self.to_int.items()]}

    @classmethod
    def from_saved(cls, data: bytes, meta: dict, *, ivf_min_items: int = 20000, nprobe: int = 16) -> "DenseIndex":
        out = cls(meta["dim"], meta["kind"], ivf_min_items=ivf_min_items, nprobe=nprobe)
        out.index = faiss.deserialize_index(np.frombuffer(data, dtype=np.uint8))
        out.is_ivf = bool(meta["ivf"])
        out.next_id = int(meta["next_id"])
        for n, iid in meta["ids"]:
            out.to_int[iid] = int(n)
            out.to_item[int(n)] = iid
        if out.index.ntotal != len(out.to_int):
            raise ValueError(f"index holds {out.index.ntotal} vectors but {len(out.to_int)} ids")
        return out

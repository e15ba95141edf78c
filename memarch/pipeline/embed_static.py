"""A static embedder distilled from the bundled all-MiniLM-L6-v2: ``Embedder("all-MiniLM-L6-v2-static")``.

A static embedder keeps one vector per token of the model's vocabulary and embeds a text as the mean
of its tokens' vectors: no transformer runs at embedding time, so it is one to two orders of magnitude
faster than MiniLM itself, at a quality cost measured in docs/retrievers.md. The table is distilled
here, once, from the bundled weights, following model2vec's recipe (``model2vec.distill`` 0.10.0 with
its defaults; the package itself is not needed, its ``distill`` extra pins an older transformers):

1. every vocabulary token except ``[unusedN]`` goes through MiniLM alone, as ``[CLS] token [SEP]``,
   and the last hidden state is mean-pooled over those three positions;
2. PCA to 256 dimensions (eigendecomposition of the covariance, each component's sign fixed so its
   largest score is positive);
3. each row is scaled by a SIF weight ``1e-4 / (1e-4 + p)``, where ``p`` is a Zipf probability from the
   token's rank in the vocabulary (frequent tokens weigh less).

At embedding time a text is tokenised by the model's fast tokenizer without special tokens (truncated
at 512 tokens), its rows are averaged and the mean is L2-normalised; a text with no tokens ("") gets
the zero vector. Distilling takes about 40 s on two idle cores; the table (30,522 x 256 float32,
31 MB) is cached under ``<cache dir>/static/all-MiniLM-L6-v2-<hash>/``, where ``<hash>`` covers the
model's files and the recipe, written atomically next to a SHA-256 of its bytes: a truncated or
altered table is distilled again, never loaded."""
from __future__ import annotations

import hashlib
import io
import logging
import re
import threading
from pathlib import Path

import numpy as np

from memarch.pipeline.embed_onnx import model_fingerprint
from memarch.pipeline.files import atomic_write_bytes, atomic_write_text, matches_digest

STATIC_MODEL = "all-MiniLM-L6-v2-static"
STATIC_MODEL_ID = "m2v:all-MiniLM-L6-v2-pca256-sif"  # cache key prefix of its vectors
PCA_DIMS = 256
SIF_COEFFICIENT = 1e-4
MAX_TOKENS = 512
DISTILL_RECIPE = ("model2vec-0.10.0 recipe: [CLS] token [SEP] mean-pooled; [unusedN] dropped; "
                  f"PCA {PCA_DIMS} by eigh, signs fixed; Zipf SIF {SIF_COEFFICIENT}; float32; v1")  # part of the cache key
_SKIP = re.compile(r"\[unused\d+\]")
_BATCH = 512  # tokens per forward pass while distilling
_TABLES: dict[str, "StaticEngine"] = {}
_LOCK = threading.Lock()


def distill_table(model_dir: str) -> np.ndarray:
    """The (vocabulary size, PCA_DIMS) float32 table; rows of skipped tokens are zero."""
    import torch
    from tokenizers import Tokenizer
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # the weight-loading bar is noise on a CLI
    tokenizer = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
    vocab = tokenizer.get_vocab()
    keep = [i for t, i in sorted(vocab.items(), key=lambda kv: kv[1]) if not _SKIP.fullmatch(t)]
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    model = AutoModel.from_pretrained(model_dir).eval()
    pooled = np.zeros((len(keep), model.config.hidden_size), np.float32)
    with torch.inference_mode():
        for start in range(0, len(keep), _BATCH):
            ids = torch.tensor([[cls, i, sep] for i in keep[start:start + _BATCH]])
            hidden = model(input_ids=ids, attention_mask=torch.ones_like(ids),
                           token_type_ids=torch.zeros_like(ids)).last_hidden_state
            pooled[start:start + len(ids)] = hidden.mean(dim=1).numpy()
    rows = _pca(np.nan_to_num(pooled.astype(np.float64)), PCA_DIMS)
    inv_rank = 1.0 / np.arange(2, len(keep) + 2)
    proba = inv_rank / inv_rank.sum()
    rows *= (SIF_COEFFICIENT / (SIF_COEFFICIENT + proba))[:, None]
    table = np.zeros((max(vocab.values()) + 1, rows.shape[1]), np.float32)
    table[keep] = rows
    return table


def _pca(x: np.ndarray, dims: int) -> np.ndarray:
    centred = x - x.mean(axis=0)
    eigvals, eigvecs = np.linalg.eigh(centred.T @ centred / (len(x) - 1))
    scores = centred @ eigvecs[:, ::-1][:, :dims]
    signs = np.sign(scores[np.argmax(np.abs(scores), axis=0), np.arange(scores.shape[1])])
    return scores * np.where(signs == 0, 1.0, signs)


def cached_table(model_dir: str, cache_dir: str | Path) -> Path:
    """The distilled table's ``.npy`` file, distilled on first use (and again if it fails its digest)."""
    folder = Path(cache_dir) / "static" / f"all-MiniLM-L6-v2-{model_fingerprint(model_dir, DISTILL_RECIPE)[:16]}"
    path = folder / "table.npy"
    if not matches_digest(path):
        logging.getLogger(__name__).info("distilling %s from %s into %s (once; about 40 s on two cores)",
                                         STATIC_MODEL, model_dir, path)
        buf = io.BytesIO()
        np.save(buf, distill_table(model_dir), allow_pickle=False)
        data = buf.getvalue()
        atomic_write_bytes(path, data)  # the table first, then its digest: never a digest of a half table
        atomic_write_text(path.with_name(path.name + ".sha256"), hashlib.sha256(data).hexdigest() + "\n")
    return path


class StaticEngine:
    """The distilled table and the model's fast tokenizer; ``encode`` returns unit rows."""

    def __init__(self, model_dir: str, cache_dir: str | Path):
        from tokenizers import Tokenizer

        self.path = cached_table(model_dir, cache_dir)
        self.table = np.load(self.path, allow_pickle=False)
        self.dim = int(self.table.shape[1])
        self.tokenizer = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)

    def encode(self, texts: list[str]) -> np.ndarray:
        """(n, dim) float32 rows in the order of ``texts``: the mean of each text's token rows, unit norm."""
        out = np.zeros((len(texts), self.dim), np.float32)
        if not texts:
            return out
        ids = [e.ids for e in self.tokenizer.encode_batch(list(texts), add_special_tokens=False)]
        counts = np.fromiter((len(i) for i in ids), dtype=np.int64, count=len(ids))
        filled = np.flatnonzero(counts)
        if len(filled):
            flat = np.fromiter((t for i in ids for t in i), dtype=np.int64, count=int(counts.sum()))
            starts = np.concatenate(([0], np.cumsum(counts[filled])[:-1]))
            out[filled] = np.add.reduceat(self.table[flat], starts, axis=0) / counts[filled, None]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)


def load_static(model_dir: str, cache_dir: str | Path) -> StaticEngine:
    """The engine, distilled if needed and loaded once per process and cache dir."""
    key = str(Path(cache_dir).resolve())
    with _LOCK:
        if key not in _TABLES:
            _TABLES[key] = StaticEngine(model_dir, cache_dir)
        return _TABLES[key]

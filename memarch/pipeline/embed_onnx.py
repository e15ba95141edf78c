"""The bundled all-MiniLM-L6-v2 run by ONNX Runtime instead of torch: ``Embedder("all-MiniLM-L6-v2-onnx")``
(fp32) and ``Embedder("all-MiniLM-L6-v2-onnx-int8")`` (int8 weights, dynamic quantisation).

The ONNX graph is exported once from the bundled weights with ``torch.onnx.export`` (the torch.export
based exporter) and cached under ``<cache dir>/onnx/all-MiniLM-L6-v2-<hash>/``, where ``<hash>`` is a
SHA-256 of the model's files (weights, config, tokenizer, pooling config) plus the export recipe: a
changed model never reads a stale export. Each cached ``.onnx`` file is written to a temporary file and
moved into place with ``os.replace``, next to a ``.sha256`` file of its own bytes; a file whose bytes do
not match (truncated, corrupt, hand-edited) is exported again instead of loaded.

The pipeline matches sentence-transformers' for this model (modules.json: Transformer, mean Pooling,
Normalize; sentence_bert_config.json: max_seq_length 256): the model's fast tokenizer truncating at
256 tokens, mean pooling of the last hidden state over the attention mask, L2 normalisation. Texts are
sorted by length into batches (less padding) and the vectors returned in input order."""
from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import tempfile
import threading
import warnings
from pathlib import Path

import numpy as np

from memarch.errors import MemarchError
from memarch.pipeline.files import file_sha256, matches_digest

ONNX_MODEL = "all-MiniLM-L6-v2-onnx"
ONNX_INT8_MODEL = "all-MiniLM-L6-v2-onnx-int8"
ONNX_MODELS = {ONNX_MODEL: "fp32", ONNX_INT8_MODEL: "int8"}  # embedder name -> weight precision
ONNX_MODEL_IDS = {ONNX_MODEL: "onnx:all-MiniLM-L6-v2-fp32", ONNX_INT8_MODEL: "onnx:all-MiniLM-L6-v2-int8"}
ONNX_REQUIREMENT = "onnxruntime>=1.31,<1.32"
EXPORT_RECIPE = "torch.onnx.export dynamo opset18 last_hidden_state; int8 dynamic per-channel; v1"  # part of the cache key
MAX_SEQ_LENGTH = 256  # sentence_bert_config.json of the bundled model
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
_MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                "special_tokens_map.json", "vocab.txt", "modules.json", "sentence_bert_config.json",
                "1_Pooling/config.json")
_ENGINES: dict[str, "OnnxEngine"] = {}  # one per precision (`ONNX_MODELS`)
_LOCK = threading.Lock()
# (model dir, recipe) -> (the files' sizes and mtimes, their fingerprint): one entry per pair, so a
# model whose files change replaces its entry instead of adding one.
_FINGERPRINTS: dict[tuple[str, str], tuple[tuple, str]] = {}


def _require_onnxruntime(model: str):
    try:
        import onnxruntime
    except ImportError:
        raise MemarchError(f"embedder {model!r} needs the onnxruntime package: "
                           f"pip install '{ONNX_REQUIREMENT}'") from None
    return onnxruntime


def model_fingerprint(model_dir: str | os.PathLike, recipe: str | None = None) -> str:
    """SHA-256 of the model's files and a recipe (default the ONNX export recipe; the static embedder
    passes its distillation recipe), memoised per process by size and mtime."""
    recipe = EXPORT_RECIPE if recipe is None else recipe
    d = Path(model_dir)
    files = [d / name for name in _MODEL_FILES if (d / name).exists()]
    where = (str(d), recipe)
    stamp = tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files)
    known = _FINGERPRINTS.get(where)
    if known is None or known[0] != stamp:
        h = hashlib.sha256(recipe.encode())
        for f in files:
            h.update(f"\x1f{f.relative_to(d)}\x1f".encode())
            with open(f, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
        known = _FINGERPRINTS[where] = (stamp, h.hexdigest())
    return known[1]


def _publish(tmp: Path, path: Path) -> None:
    """Move a finished temporary file into place, then its digest (both atomically)."""
    digest = file_sha256(tmp)
    os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide a shared cache from other users
    os.replace(tmp, path)
    fd, dtmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        fh.write(digest + "\n")
    os.replace(dtmp, path.with_name(path.name + ".sha256"))


def _temp_path(path: Path) -> Path:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem + ".", suffix=".tmp.onnx")
    os.close(fd)
    return Path(tmp)


@contextlib.contextmanager
def _quiet():
    """The exporter's progress prints, warnings and the quantiser's root-logger advice stay off the CLI."""
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(previous)


def export_fp32(model_dir: str, path: Path) -> None:
    """Export the transformer (input ids, mask, token types -> last hidden state) to ``path``."""
    import torch
    from transformers import AutoModel

    class _Encoder(torch.nn.Module):
        def __init__(self, bert):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids).last_hidden_state

    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # the weight-loading bar is noise on a CLI
    with _quiet():
        bert = AutoModel.from_pretrained(model_dir, attn_implementation="eager").eval()
    example = (torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]]),
               torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]]), torch.zeros(2, 4, dtype=torch.long))
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq", max=512)
    tmp = _temp_path(path)
    try:
        with torch.no_grad(), _quiet():
            torch.onnx.export(_Encoder(bert).eval(), example, str(tmp), dynamo=True, external_data=False,
                              input_names=list(_INPUTS), output_names=["last_hidden_state"],
                              dynamic_shapes=tuple({0: batch, 1: seq} for _ in _INPUTS),
                              opset_version=18, verbose=False)
        _publish(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def quantize_int8(src: Path, path: Path) -> None:
    """Dynamic int8 quantisation of ``src``'s weights, per output channel (activations quantised at
    run time). Per-tensor weights cost far more here: cosine to the fp32 vectors min 0.87 / mean 0.95
    on LoCoMo turns, against 0.97 / 0.99 per channel."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    tmp = _temp_path(path)
    try:
        with _quiet():
            quantize_dynamic(str(src), str(tmp), weight_type=QuantType.QInt8, per_channel=True)
        _publish(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def cached_export(model_dir: str, precision: str, cache_dir: str | os.PathLike) -> Path:
    """The ONNX file for ``precision`` ("fp32" or "int8"), exported (and quantised) on first use."""
    folder = Path(cache_dir) / "onnx" / f"all-MiniLM-L6-v2-{model_fingerprint(model_dir)[:16]}"
    folder.mkdir(parents=True, exist_ok=True)
    fp32 = folder / "model.onnx"
    if not matches_digest(fp32):
        export_fp32(model_dir, fp32)
    if precision == "fp32":
        return fp32
    int8 = folder / "model-int8.onnx"
    if not matches_digest(int8):
        quantize_int8(fp32, int8)
    return int8


def default_threads() -> int:
    """``$MEMARCH_ONNX_THREADS``, else one intra-op thread per core (at most 8)."""
    raw = os.environ.get("MEMARCH_ONNX_THREADS", "")
    return int(raw) if raw.strip().isdigit() and int(raw) > 0 else max(1, min(8, os.cpu_count() or 1))


class OnnxEngine:
    """One ONNX Runtime session and the model's fast tokenizer; ``encode`` returns unit rows."""

    def __init__(self, model: str, model_dir: str, cache_dir: str | os.PathLike, threads: int | None = None):
        ort = _require_onnxruntime(model)
        from tokenizers import Tokenizer

        self.path = cached_export(model_dir, ONNX_MODELS[model], cache_dir)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads or default_threads()
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        self.session = ort.InferenceSession(str(self.path), opts, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_SEQ_LENGTH)
        self.tokenizer.no_padding()  # padded per length-sorted batch below
        pad = json.loads((Path(model_dir) / "tokenizer_config.json").read_text()).get("pad_token", "[PAD]")
        self.pad_id = self.tokenizer.token_to_id(pad) or 0
        self.dim = int(self.session.get_outputs()[0].shape[-1])

    def _batch(self, encodings: list) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros((len(encodings), width), dtype=np.int64)
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n], mask[row, :n], types[row, :n] = e.ids, e.attention_mask, e.type_ids
        hidden = self.session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0]
        m = mask[..., None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        """(n, dim) float32 unit rows in the order of ``texts``; batches group texts of similar
        token counts (less padding), the rows go back to the input order."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        step = max(1, batch_size)
        for start in range(0, len(order), step):
            idx = order[start:start + step]
            out[idx] = self._batch([encodings[i] for i in idx])
        return out


def load_engine(model: str, model_dir: str, cache_dir: str | os.PathLike) -> OnnxEngine:
    """The engine for ``model``, loaded (and exported if needed) once per process and cache dir."""
    key = f"{model}\x1f{Path(cache_dir).resolve()}"
    with _LOCK:
        if key not in _ENGINES:
            _ENGINES[key] = OnnxEngine(model, model_dir, cache_dir)
        return _ENGINES[key]

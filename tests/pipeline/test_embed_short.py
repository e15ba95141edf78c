"""`all-MiniLM-L6-v2-128`: the bundled MiniLM reading 128 tokens of a text instead of 256 — the same
vector as the default for a short text, another for a long one, cached under its own key, and the
default model left reading 256."""
from __future__ import annotations

import numpy as np
import pytest

from memarch.pipeline.embed import DEFAULT_MODEL, SHORT_MODEL, Embedder, check_embedder

pytestmark = pytest.mark.integration

SHORT = "I moved to Lisbon in May and started a new job at the bakery."
LONG = " ".join(f"On day {i} I walked to the market, bought bread and talked to the baker about the weather."
                for i in range(20))  # ~400 word pieces


def test_short_texts_embed_alike_long_ones_differ(tmp_path):
    full, short = Embedder(DEFAULT_MODEL, use_cache=False), Embedder(SHORT_MODEL, use_cache=False)
    a, b = full.embed([SHORT, LONG]), short.embed([SHORT, LONG])
    assert np.abs(a[0] - b[0]).max() < 1e-5
    assert float(a[1] @ b[1]) < 0.9999  # the long text was cut earlier
    again = Embedder(DEFAULT_MODEL, use_cache=False).embed([LONG])[0]
    assert np.abs(again - a[1]).max() < 1e-5  # the default model still reads 256


def test_its_own_cache_key_and_a_known_dimension(tmp_path):
    assert Embedder(SHORT_MODEL, cache_dir=tmp_path).key(SHORT) != Embedder(DEFAULT_MODEL, cache_dir=tmp_path).key(SHORT)
    assert Embedder(SHORT_MODEL, cache_dir=tmp_path).dim == 384
    assert check_embedder(SHORT_MODEL) == SHORT_MODEL

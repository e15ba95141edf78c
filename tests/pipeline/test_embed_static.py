"""Embedder("all-MiniLM-L6-v2-static"): a static token table distilled from the bundled MiniLM with
model2vec's recipe. Checked: the distillation's shape and arithmetic, agreement with the model it was
distilled from on a fixed set (rank correlation of pairwise similarities), the encoding's contract
(unit rows, input order, batch = one by one) and the table cache (reused, never stale or corrupt)."""
from __future__ import annotations

import numpy as np
import pytest

from memarch.errors import MemarchError
from memarch.pipeline import embed as embed_mod
from memarch.pipeline import embed_static
from memarch.pipeline.cache import default_cache_dir
from memarch.pipeline.embed import NAMED_MODELS, Embedder, bundled_model_path, check_embedder
from memarch.pipeline.embed_static import PCA_DIMS, STATIC_MODEL, cached_table

# Paraphrases that share few words, so only meaning links them (a bag of words cannot). Measured
# here: each text's nearest other text is its partner for 0.91 of the texts with the static table,
# 0.97 with torch MiniLM, 0.03 with the hash embedder and 0.09-0.19 with random tables (5 seeds);
# Spearman correlation of the 496 pairwise cosines with torch's: 0.51 static, 0.12-0.20 random.
MIN_PARTNER = 0.75
MIN_SPEARMAN = 0.4
PAIRS = [
    ("I adopted a puppy.", "We got a new dog."),
    ("She is a nurse at the hospital.", "Her job is caring for patients in a clinic."),
    ("The car broke down on the highway.", "Our vehicle stopped working on the motorway."),
    ("He plays the guitar in a band.", "He is a musician who performs with a group."),
    ("I love painting landscapes.", "Art is my passion, especially drawing scenery."),
    ("We flew to Paris for our honeymoon.", "After the wedding we travelled to France by plane."),
    ("My son started kindergarten.", "Our child began school this year."),
    ("I ran a marathon last spring.", "Months ago I completed a long-distance race."),
    ("She baked cookies for the party.", "Biscuits were made in the oven for the celebration."),
    ("The stock market crashed.", "Shares lost value dramatically."),
    ("I'm learning to speak Spanish.", "I study a foreign language from Spain."),
    ("He got promoted to manager.", "His boss gave him a higher position at work."),
    ("It rained all weekend.", "Saturday and Sunday were wet and stormy."),
    ("She adopted a kitten.", "A young cat joined her family."),
    ("We went fishing at the lake.", "We caught trout on the water."),
    ("My laptop stopped working.", "The computer is broken."),
]
TEXTS = [t for pair in PAIRS for t in pair]


@pytest.fixture(scope="module")
def static():
    """The engine, distilled once into the session cache dir (conftest's $MEMARCH_CACHE_DIR)."""
    return Embedder(STATIC_MODEL, use_cache=False)


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def _pairwise(v: np.ndarray) -> np.ndarray:
    return (v @ v.T)[np.triu_indices(len(v), k=1)]


def test_the_static_name_is_known_has_its_own_key_and_needs_no_table_for_nothing(monkeypatch):
    monkeypatch.setattr(embed_mod, "load_static", lambda *a, **k: pytest.fail("table loaded"))
    e = Embedder(STATIC_MODEL, use_cache=False)
    assert STATIC_MODEL in NAMED_MODELS and e.dim == PCA_DIMS == 256
    others = {Embedder(m, use_cache=False).key("x") for m in NAMED_MODELS if m != STATIC_MODEL}
    assert e.key("x") not in others  # its vectors never mix with another embedder's in the disk cache
    v = e.embed([])
    assert v.shape == (0, 256) and v.dtype == np.float32


def test_an_unknown_embedder_name_is_one_clear_error(tmp_path):
    with pytest.raises(MemarchError, match=r"--embedder 'no-such-model': expected .*all-MiniLM-L6-v2-static") as err:
        check_embedder("no-such-model")
    assert "\n" not in str(err.value)
    assert check_embedder(STATIC_MODEL) == STATIC_MODEL and check_embedder(str(tmp_path)) == str(tmp_path)


def test_pca_keeps_the_top_components_with_fixed_signs():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(500, 6)) * np.array([9.0, 5.0, 3.0, 1.0, 0.5, 0.1])
    scores = embed_static._pca(x, 3)
    assert scores.shape == (500, 3)
    var = scores.var(axis=0)
    assert var[0] > var[1] > var[2] and var[2] > 4 * x[:, 3].var()  # the three widest directions, in order
    assert np.allclose(scores.T @ scores / 499, np.diag(var * 500 / 499), atol=1e-6 * var[0] * 500)  # uncorrelated
    assert all(scores[np.argmax(np.abs(scores[:, j])), j] > 0 for j in range(3))  # each sign fixed
    assert np.allclose(embed_static._pca(-x, 3), scores)  # ... so a mirrored input gives the same scores


@pytest.mark.integration
def test_encoding_contract(static):
    v = static.embed(TEXTS + ["", "   "])
    assert v.shape == (len(TEXTS) + 2, 256) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v[:-2], axis=1), 1.0, atol=1e-5)
    assert not v[-2:].any()  # no tokens: the zero vector (cosine 0 with everything)
    one_by_one = np.stack([Embedder(STATIC_MODEL, use_cache=False).embed([t])[0] for t in TEXTS])
    perm = np.random.default_rng(0).permutation(len(TEXTS))
    assert np.allclose(static.embed([TEXTS[i] for i in perm]), one_by_one[perm], atol=1e-6)


def _partner_rate(v: np.ndarray) -> float:
    """Share of texts whose nearest other text is their paraphrase."""
    sims = v @ v.T - 2 * np.eye(len(v))
    return float((sims.argmax(axis=1) == (np.arange(len(v)) ^ 1)).mean())


@pytest.mark.integration
def test_the_table_agrees_with_the_model_it_was_distilled_from(static, real_embedder, monkeypatch):
    s, t = static.embed(TEXTS), real_embedder.embed(TEXTS)
    assert _partner_rate(s) >= MIN_PARTNER
    assert _spearman(_pairwise(s), _pairwise(t)) > MIN_SPEARMAN
    # one row per vocabulary token; the [unusedN] tokens (dropped by the recipe) have zero rows, every other one not
    engine = embed_static.load_static(bundled_model_path(), default_cache_dir())
    vocab = engine.tokenizer.get_vocab()
    unused = [i for tok, i in vocab.items() if tok.startswith("[unused")]
    assert engine.table.shape == (len(vocab), 256) and len(unused) > 900
    assert not engine.table[unused].any() and engine.table.any(axis=1).sum() == len(vocab) - len(unused)
    # the check can fail: the same tokenising and pooling over a random table of the same shape cannot pair them
    monkeypatch.setattr(engine, "table", np.random.default_rng(0).normal(size=engine.table.shape).astype(np.float32))
    r = Embedder(STATIC_MODEL, use_cache=False).embed(TEXTS)
    assert _partner_rate(r) < 0.4 and _spearman(_pairwise(r), _pairwise(t)) < MIN_SPEARMAN


def _fake_distill(calls):
    def distill(model_dir):
        calls.append(model_dir)
        return np.arange(30522 * 4, dtype=np.float32).reshape(30522, 4) % 7
    return distill


def test_the_table_is_reused_and_a_damaged_one_distilled_again(tmp_path, monkeypatch):
    calls: list = []
    monkeypatch.setattr(embed_static, "distill_table", _fake_distill(calls))
    path = cached_table(bundled_model_path(), tmp_path)
    assert calls and path.parent.parent == tmp_path / "static"
    pristine = path.read_bytes()
    assert cached_table(bundled_model_path(), tmp_path) == path and len(calls) == 1  # reused
    for damage in ("truncated", "other bytes", "no digest"):
        if damage == "truncated":
            path.write_bytes(pristine[:100])
        elif damage == "other bytes":
            path.write_bytes(pristine[:-8] + bytes(8))
        else:
            path.with_name("table.npy.sha256").unlink()
        n = len(calls)
        assert cached_table(bundled_model_path(), tmp_path) == path and len(calls) == n + 1
        assert path.read_bytes() == pristine


def test_a_changed_recipe_gets_a_new_table(tmp_path, monkeypatch):
    calls: list = []
    monkeypatch.setattr(embed_static, "distill_table", _fake_distill(calls))
    first = cached_table(bundled_model_path(), tmp_path)
    monkeypatch.setattr(embed_static, "DISTILL_RECIPE", embed_static.DISTILL_RECIPE + " changed")
    second = cached_table(bundled_model_path(), tmp_path)
    assert second.parent != first.parent and len(calls) == 2

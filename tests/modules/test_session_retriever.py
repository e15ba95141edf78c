"""The `session` retriever (session-first reading): sessions ranked by their pooled item cosines fused
with session BM25, then only the items of the top ``sessions`` sessions, ranked by the item-level
fusion; pooling max vs mean of the best three; the session BM25 equals an index built by hand; it is
registered for conversations, in the space and its markdown row says "session"; a real trial on
LoCoMo scores with it."""
from __future__ import annotations

import numpy as np
import pytest

from memarch.modules.retrievers.session import SessionRetriever, _pool, session_of
from memarch.modules.stores.lexical import BM25Index, tokenize
from memarch.modules.stores.vector import VectorStore
from memarch.pipeline.episodes import Query
from memarch.pipeline.items import MemoryItem

SESSIONS = {
    "s1": ["Ann started a new job at the bakery", "the bakery is on Rua Augusta", "she bakes bread at dawn"],
    "s2": ["Bob bought a red bike", "he rides the bike to work", "the bike cost two hundred euros"],
    "s3": ["the weather was grey all week", "they watched a film about boats", "Ann liked the film"],
}


def _store(resources):
    store = VectorStore(resources)
    store.add([MemoryItem(t, "turn", episode_id=s, source_ids=[f"{s}:{i}"])
               for s, texts in SESSIONS.items() for i, t in enumerate(texts)])
    return store


def test_only_the_top_sessions_items(hash_resources):
    store = _store(hash_resources)
    ranked = SessionRetriever(hash_resources, sessions=1).rank(Query("what did Bob buy, a bike?"), store, 10)
    assert {s.item.episode_id for s in ranked} == {"s2"} and len(ranked) == 3
    assert all(s.trace["session_rank"] == 1 and s.trace["session"] == "s2" for s in ranked)
    two = SessionRetriever(hash_resources, sessions=2).rank(Query("what did Bob buy, a bike?"), store, 10)
    assert len({s.item.episode_id for s in two}) == 2 and two[0].item.episode_id == "s2"


def test_k_caps_the_items(hash_resources):
    store = _store(hash_resources)
    assert len(SessionRetriever(hash_resources, sessions=3).rank(Query("Ann bakery film"), store, 4)) == 4


def test_pooling_max_and_top3_mean():
    assert _pool([0.9, 0.2, 0.1, 0.0], 0) == 0.9
    assert _pool([0.9, 0.2, 0.1, 0.0], 1) == pytest.approx(0.4)
    assert _pool([0.5], 1) == 0.5


def test_session_scores_equal_a_direct_fusion(hash_resources):
    """The session order is the z-score fusion of max-pooled cosines and a BM25 built by hand over each
    session's joined tokens."""
    store = _store(hash_resources)
    query = Query("where does Ann work, the bakery?")
    ranked = SessionRetriever(hash_resources, sessions=3, dense_weight=1.5, item_lexical_weight=0).rank(query, store, 9)
    qv = hash_resources.embedder.embed_one(query.text)
    names = sorted(SESSIONS)
    dense = np.array([max(float(hash_resources.embedder.embed_one(t) @ qv) for t in SESSIONS[s]) for s in names])
    lexical = np.asarray(BM25Index([[w for t in SESSIONS[s] for w in tokenize(t)] for s in names]).scores(
        tokenize(query.text)), dtype=float)
    z = lambda x: (x - x.mean()) / x.std()  # noqa: E731
    fused = 1.5 * z(dense) + z(lexical)
    expected = [names[j] for j in np.argsort(-fused, kind="stable")]
    got = sorted({s.item.episode_id: s.trace["session_rank"] for s in ranked}.items(), key=lambda kv: kv[1])
    assert [s for s, _ in got] == expected
    by_session = {s.item.episode_id: s.trace["session_score"] for s in ranked}
    for j, s in enumerate(names):
        assert by_session[s] == pytest.approx(fused[j], abs=1e-5)


def test_the_best_items_bm25_joins_the_session_score(hash_resources):
    """With ``item_lexical_weight`` w the session score adds w x z(the BM25 of its best item, an index
    over every item); the defaults use it (w 1, dense_weight 0.8)."""
    store = _store(hash_resources)
    query = Query("where does Ann work, the bakery?")
    names = sorted(SESSIONS)
    qv = hash_resources.embedder.embed_one(query.text)
    dense = np.array([max(float(hash_resources.embedder.embed_one(t) @ qv) for t in SESSIONS[s]) for s in names])
    terms = tokenize(query.text)
    lexical = np.asarray(BM25Index([[w for t in SESSIONS[s] for w in tokenize(t)] for s in names]).scores(terms))
    flat = [(s, t) for s in names for t in SESSIONS[s]]
    per_item = np.asarray(BM25Index([tokenize(t) for _, t in flat]).scores(terms))
    best = np.array([max(v for (s2, _), v in zip(flat, per_item) if s2 == s) for s in names])
    z = lambda x: (x - x.mean()) / x.std() if x.std() > 0 else np.zeros(len(x))  # noqa: E731
    for kwargs, (dw, w) in (({"item_lexical_weight": 0.5, "dense_weight": 1.0}, (1.0, 0.5)), ({}, (0.8, 1.0))):
        ranked = SessionRetriever(hash_resources, sessions=3, **kwargs).rank(query, store, 9)
        fused = dw * z(dense) + z(lexical) + w * z(best)
        by_session = {s.item.episode_id: s.trace["session_score"] for s in ranked}
        for j, s in enumerate(names):
            assert by_session[s] == pytest.approx(fused[j], abs=1e-5)
    assert not np.allclose(z(best), z(lexical))  # the best item ranks the sessions differently


def test_never_reads_the_asking_episode(hash_resources):
    store = _store(hash_resources)
    ranked = SessionRetriever(hash_resources, sessions=3).rank(Query("Bob bike", episode_id="s2"), store, 10)
    assert all(s.item.episode_id != "s2" for s in ranked)


def test_an_item_without_episode_is_its_own_session():
    item = MemoryItem("x", "fact")
    assert session_of(item) == item.id
    assert session_of(MemoryItem("y", "turn", episode_id="e1")) == "e1"


def test_registered_for_conversations_in_the_space_and_markdown():
    from memarch.pipeline.registry import REGISTRY
    from memarch.pipeline.space import ArchitectureSpace

    spec = REGISTRY.get("retriever", "session")
    assert spec.families == ("conversation",)
    assert "session" in ArchitectureSpace("conversation").retrievers
    assert "session" not in ArchitectureSpace("experience").retrievers
    knobs = {k.name for k in spec.knobs}
    assert {"sessions", "pooling", "fusion", "dense_weight", "pack", "time_weight"} <= knobs


@pytest.mark.integration
def test_a_locomo_trial_reads_sessions_first(data_dir, hash_resources):
    from memarch.benchmarks import get_benchmark
    from memarch.benchmarks.evaluation.evaluate import evaluate
    from memarch.pipeline.architecture import Architecture

    bench = get_benchmark("locomo", data_dir / "locomo")
    arch = Architecture(("turn",), "vector", "session", "lightweight", params={"retrieve.sessions": 2})
    result = evaluate(arch, bench, split="validation", resources=hash_resources, limit=120)
    assert not result.failed, result.error
    assert 0.0 < result.scores["session_hit@1"] <= 1.0 and result.scores["questions"] > 50


def test_stem_tokenize_reduces_words_to_their_stems():
    from memarch.modules.stores.lexical import analyzer, stem_tokenize

    assert stem_tokenize("She paints; the paintings were painted") == ["paint", "paint", "paint"]
    assert stem_tokenize("the adoption agencies") == ["adopt", "agenc"]  # stopwords go first
    assert analyzer(False) is tokenize and analyzer(True) is stem_tokenize


def test_stem_matches_other_forms_of_a_word(hash_resources):
    """With ``stem`` 1 both BM25s read stems: a question about "painting" finds the session that says
    "paints" by its words alone (dense off), which plain tokens cannot; ``stem`` 0 (the default) is
    the plain index, and both indexes live side by side on one store."""
    from memarch.modules.stores.lexical import lexical_index

    store = VectorStore(hash_resources)
    store.add([MemoryItem("Melanie paints sunsets by the lake", "turn", episode_id="s1", source_ids=["s1:0"]),
               MemoryItem("Caroline went to a support group", "turn", episode_id="s2", source_ids=["s2:0"]),
               MemoryItem("the weather was grey", "turn", episode_id="s3", source_ids=["s3:0"])])
    query = Query("what is Melanie's painting about")
    lexical_only = {"dense_weight": 0.25, "item_lexical_weight": 1.0}
    stemmed = SessionRetriever(hash_resources, sessions=3, stem=1, **lexical_only).rank_sessions(query, store)
    plain = SessionRetriever(hash_resources, sessions=3, **lexical_only).rank_sessions(query, store)
    assert stemmed.terms == ["melani", "s", "paint", "about"] and plain.terms == ["melanie", "s", "painting", "about"]
    plain_index = lexical_index(store, "default")
    stem_index = lexical_index(store, "default", stem=True)
    assert plain_index is not stem_index and stem_index.stem and not plain_index.stem
    ids = [it.id for it in store.list("default")]
    assert stem_index.scores_of(["paint"], ids)[0] > 0 and plain_index.scores_of(["paint"], ids)[0] == 0
    assert stemmed.sessions[0] == "s1"
    # a write reaches both indexes
    store.add([MemoryItem("Bob painted a fence", "turn", episode_id="s4", source_ids=["s4:0"])])
    ids = [it.id for it in store.list("default")]
    assert lexical_index(store, "default", stem=True).scores_of(["fenc"], ids)[3] > 0
    assert lexical_index(store, "default").scores_of(["fence"], ids)[3] > 0


def test_stem_defaults_off_so_saved_architectures_read_as_before(hash_resources):
    store = _store(hash_resources)
    query = Query("where does Ann work, the bakery?")
    default = SessionRetriever(hash_resources, sessions=3).rank(query, store, 9)
    off = SessionRetriever(hash_resources, sessions=3, stem=0).rank(query, store, 9)
    assert [(s.item.id, s.score) for s in default] == [(s.item.id, s.score) for s in off]
    assert SessionRetriever.DEFAULTS["stem"] == 0

"""The read path's shortcuts give what the plain forms give: the bound eligibility predicates, the
store's batch lookup, and the hybrid retriever's fusion that traces only the items it returns."""
from __future__ import annotations

import itertools

import pytest

from memarch.modules.retrievers._eligibility import eligible, eligible_fn, excluded_fn
from memarch.modules.retrievers.hybrid import HybridRetriever
from memarch.modules.stores.json_store import JsonStore
from memarch.pipeline.episodes import Query
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.retrieval import count_words
from retriever_helpers import filled_store


def test_bound_predicates_equal_eligible_on_every_combination():
    items = [MemoryItem(f"t{i}", "turn", episode_id=ep, namespace=ns, status=status)
             for i, (ep, ns, status) in enumerate(itertools.product(
                 (None, "e1", "e2"), ("default", "other"), ("active", "deleted", "superseded")))]
    for query in (Query("q"), Query("q", episode_id="e1"), Query("q", namespace="other", episode_id="e2")):
        keep, drop = eligible_fn(query), excluded_fn(query)
        for it in items:
            assert keep(it) == eligible(it, query) and drop(it) == (not eligible(it, query)), (it, query)


def test_get_many_is_get_for_each_id():
    store = JsonStore()
    a, b, c = (MemoryItem(t, "turn") for t in ("alpha", "beta", "gamma"))
    store.add([a, b, c])
    store.delete(b.id)
    ids = [c.id, b.id, "missing", a.id]
    assert store.get_many(ids) == [store.get(i) for i in ids] == [c, None, None, a]
    assert store.get_many([a.id], "elsewhere") == [None] and store.get_many([]) == []


@pytest.mark.parametrize("pool, dense_weight", [(50, 1.0), (3, 2.0), (2, 0.0)])
def test_hybrid_traces_and_scores_equal_a_plain_fusion(hash_resources, pool, dense_weight):
    """The fusion by id returns what fusing every hit into a ScoredItem returns (order, scores, traces)."""
    store = filled_store(hash_resources)
    retriever = HybridRetriever(hash_resources, pool=pool, dense_weight=dense_weight)
    query = Query("cook the eggs on the stove")
    got = retriever.rank(query, store, 6)
    vector = hash_resources.embedder.embed_one(query.text)
    p = max(pool, 6)
    dense = store.search(vector, p, query.namespace, exclude=retriever.exclude_fn(query))
    from memarch.modules.stores.lexical import lexical_index

    lexical = lexical_index(store, query.namespace).search(query.text, p, keep=lambda it: eligible(it, query))
    want: dict[str, dict] = {}
    for side, hits, weight in (("dense", dense, dense_weight), ("lexical", lexical, 1.0)):
        for rank, (it, score) in enumerate(hits, start=1):
            entry = want.setdefault(it.id, {"score": 0.0, "trace": {"dense_rank": None, "dense_score": None,
                                                                    "lexical_rank": None, "lexical_score": None}})
            entry["trace"][f"{side}_rank"], entry["trace"][f"{side}_score"] = rank, round(float(score), 6)
            entry["score"] += weight / (60 + rank)
    order = sorted(want, key=lambda i: (-want[i]["score"], i))[:6]
    assert [s.item.id for s in got] == order
    for s in got:
        assert s.score == want[s.item.id]["score"]
        assert s.trace == {**want[s.item.id]["trace"], "rrf": round(s.score, 6), "pool": p}
        assert list(s.trace) == ["dense_rank", "dense_score", "lexical_rank", "lexical_score", "rrf", "pool"]
    assert any(s.trace["lexical_rank"] is None or s.trace["dense_rank"] is None for s in got) or pool == 50


def test_count_tokens_is_memoised_and_pure():
    text = "one two  three\nfour"
    assert count_words(text) == 4 == count_words(text) and count_words("") == 0
    assert count_words.cache_info().hits >= 1


def test_hybrid_reuses_its_last_fusion_only_while_nothing_changed(hash_resources):
    """A deeper read of the same query on an unchanged store is the first read's longer prefix; a
    write, another query, another episode or other settings fuse afresh."""
    from memarch.modules.retrievers import hybrid

    store = filled_store(hash_resources)
    retriever = HybridRetriever(hash_resources)
    query = Query("cook the eggs on the stove")
    short = retriever.rank(query, store, 3)
    deep = retriever.rank(query, store, 8)
    assert [s.item.id for s in deep[:3]] == [s.item.id for s in short[:3]]
    assert [(s.score, s.trace) for s in deep[:3]] == [(s.score, s.trace) for s in short[:3]]
    assert deep[0] is not short[0] and deep[0].trace is not short[0].trace  # fresh objects each read
    fresh = HybridRetriever(hash_resources)
    hybrid._LAST.clear()
    assert [(s.item.id, s.score, s.trace) for s in fresh.rank(query, store, 8)] == \
        [(s.item.id, s.score, s.trace) for s in deep]
    top = deep[0].item
    store.delete(top.id)
    assert top.id not in {s.item.id for s in retriever.rank(query, store, 8)}
    episode = deep[1].item.episode_id
    assert episode is not None and episode in {s.item.episode_id for s in retriever.rank(query, store, 8)}
    assert episode not in {s.item.episode_id for s in retriever.rank(Query(query.text, episode_id=episode), store, 8)}
    other = HybridRetriever(hash_resources, dense_weight=0.0)
    assert [s.trace["dense_rank"] for s in other.rank(query, store, 3)] != [None] * 3  # ranks kept, weight 0
    assert [s.score for s in other.rank(query, store, 3)] != [s.score for s in retriever.rank(query, store, 3)]


def test_lazy_traces_equal_the_eager_ones_and_are_made_when_read():
    from memarch.modules.retrievers import hybrid
    from memarch.pipeline.retrieval import LazyScoredItem, ScoredItem

    made = []

    def make(*args):
        made.append(args)
        return {"args": list(args)}

    it = MemoryItem("Ana moved to Lisbon.", "fact")
    lazy = LazyScoredItem(it, 0.5, make, (1, 2))
    assert made == []
    assert lazy.trace == {"args": [1, 2]} and lazy.trace is lazy.trace and len(made) == 1
    lazy.trace = {**lazy.trace, "truncated": True}
    assert lazy.trace == {"args": [1, 2], "truncated": True}
    assert isinstance(lazy, ScoredItem) and (lazy.item, lazy.score) == (it, 0.5)
    # the hybrid retriever's traces, made lazily, are the ones it made eagerly
    sides = {"dense": {it.id: (1, 0.61)}, "lexical": {}}
    assert LazyScoredItem(it, 0.01, hybrid._trace, (it.id, sides, 0.01, 50, "rrf")).trace == \
        hybrid._trace(it.id, sides, 0.01, 50, "rrf")


def test_packed_lines_equal_format_item():
    from memarch.pipeline.episodes import Query
    from memarch.pipeline.retrieval import ScoredItem, format_item, pack

    items = [MemoryItem("Ana (3 May 2026): I moved to Lisbon. It is sunny.", "turn", event_time="2026-05-03"),
             MemoryItem("Rui plays the cello", "fact", event_time=None),
             MemoryItem("x " * 30, "event", event_time="2026-05-04")]
    for compact in (False, True):
        for _ in range(2):  # the second time from the memo
            got = pack(Query("q"), [ScoredItem(i, 1.0) for i in items], top_k=5, context_budget=40, compact=compact)
            lines = [format_item(i, compact) for i in items]
            assert got.context.split("\n")[:2] == lines[:2]
            assert got.trace["words_used"] == 40 and got.items[-1].trace.get("truncated")

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


def test_count_words_is_memoised_and_pure():
    from memarch.pipeline.retrieval import ContextLines
    from memarch.pipeline.text_caches import TextCaches

    text = "one two  three\nfour"
    assert count_words(text) == 4 == count_words(text) and count_words("") == 0
    words = ContextLines.of(TextCaches()).words  # the memo is its owner's (a `Resources.texts`)
    assert words(text) == 4 == words(text) and words("") == 0
    assert words.cache_info().hits >= 1


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
    store.caches.part(hybrid.__name__).clear()  # the store's last fusion
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


@pytest.mark.parametrize("name", ["vector", "hybrid", "json"])
def test_a_store_spares_only_the_filter_its_own_indexes_make_redundant(hash_resources, tmp_path, name):
    """`NotActiveIn(ns)` / `ActiveIn(ns)` (a read with no episode to exclude) give every store's dense
    search and the BM25 search the same hits, scores and order as the same filter as a plain
    predicate: the namespace's indexes hold its active items only, so the store need not call it."""
    from memarch.modules.stores.activity import INACTIVE, ActiveIn, NotActiveIn
    from memarch.modules.stores.lexical import lexical_index
    from store_helpers import store_factory, unit_rows

    store = store_factory(hash_resources, tmp_path)(name)
    texts = [f"note {j} about topic {j % 7} and the stove" for j in range(120)]
    for ns in ("a", "b"):
        store.add([MemoryItem(t, "turn", namespace=ns, episode_id=f"e{j % 9}") for j, t in enumerate(texts)],
                  vectors=unit_rows(len(texts), seed=3))
    for it in store.list("a")[::3]:
        store.delete(it.id, "a", reason="test", actor="manager:test")
    store.update(store.list("a")[1])  # re-indexed in place
    plain_drop = lambda it: it.status != "active" or it.namespace != "a"  # noqa: E731
    plain_keep = lambda it: not plain_drop(it)  # noqa: E731
    for q in unit_rows(12, seed=8):
        for k in (1, 5, 40, 200):
            want = [(it.id, s) for it, s in store.search(q, k, "a", exclude=plain_drop)]
            assert [(it.id, s) for it, s in store.search(q, k, "a", exclude=NotActiveIn("a"))] == want
            assert [(it.id, s) for it, s in store.search(q, k, "a", exclude=INACTIVE)] == want
            assert store.search(q, k, "a", exclude=NotActiveIn("b")) == []  # another namespace's: all out
        many = store.search_many(q[None, :], 8, "a", exclude=INACTIVE, min_score=0.1)
        assert [[(it.id, s) for it, s in row] for row in many] == \
            [[(it.id, s) for it, s in store.search(q, 8, "a", exclude=plain_drop) if not s < 0.1]]
    index = lexical_index(store, "a")
    for text in ("topic 3 stove", "note 17", "nothing matches zebra"):
        for n in (1, 10, 100):
            want = [(it.id, s) for it, s in index.search(text, n, keep=plain_keep)]
            assert [(it.id, s) for it, s in index.search(text, n, keep=ActiveIn("a"))] == want
            assert index.search(text, n, keep=ActiveIn("b")) == []


def test_the_batch_bound_never_skips_an_earlier_item_that_reaches_the_threshold():
    """`_earlier_may_reach` is False for a written item only where no earlier item of its batch has a
    cosine at or above the threshold as the manager computes it (admitted rows @ the item's vector,
    float32): planted near-duplicates at, just above and just below the threshold included."""
    import numpy as np

    from memarch.modules.managers._near_batch import earlier_may_reach as _earlier_may_reach

    rng = np.random.default_rng(11)
    checked = skipped = 0
    for trial in range(300):
        n, d = int(rng.integers(2, 24)), 384
        x = rng.standard_normal((n, d)).astype(np.float32)
        threshold = float(rng.choice([0.85, 0.88, 0.95, 0.98]))
        for j in range(1, n):  # some rows made near-duplicates of an earlier one, near the threshold
            if rng.random() < 0.3:
                i = int(rng.integers(0, j))
                a = x[i] / np.linalg.norm(x[i])
                noise = rng.standard_normal(d)
                noise -= noise @ a * a
                noise /= np.linalg.norm(noise)
                c = threshold + float(rng.choice([-1e-6, 0.0, 1e-7, 1e-6, 0.01, -0.01]))
                x[j] = (c * a + np.sqrt(max(0.0, 1 - c * c)) * noise).astype(np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        reach = _earlier_may_reach(x, threshold)
        for j in range(n):
            sims = (x[:j] @ x[j]).astype(np.float64)  # as `FloorManager._near` compares them
            hit = bool(j) and bool((~(sims < threshold)).any())
            checked += 1
            skipped += not reach[j]
            assert reach[j] or not hit, (trial, j)
    assert skipped > checked // 2  # it does skip: most rows are far from every earlier one


def test_embed_one_from_the_memo_equals_embed_and_is_a_copy(hash_resources):
    import numpy as np

    embedder = hash_resources.embedder
    text = "Caroline moved to Paris in May 2023"
    first = embedder.embed_one(text)  # computed
    again = embedder.embed_one(text)  # from the memo
    assert again.dtype == np.float32 and np.array_equal(again, embedder.embed([text])[0]) and np.array_equal(first, again)
    requested = embedder.requested
    again[:] = 0.0
    assert np.array_equal(embedder.embed_one(text), first) and embedder.requested == requested + 1

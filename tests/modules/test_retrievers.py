"""Retrievers, part one: registration, BM25 parity with rank-bm25, the common contract (no
self-retrieval, deleted items, top_k and token budget), hybrid and contrastive."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from memarch.errors import MemarchError
from memarch.modules.stores.lexical import BM25Index, lexical_index, tokenize
from memarch.modules.retrievers.cbr_rerank import CBRRerankRetriever
from memarch.modules.retrievers.contrastive import ContrastiveRetriever
from memarch.modules.retrievers.graph import GraphRetriever
from memarch.modules.retrievers.hybrid import HybridRetriever
from memarch.modules.retrievers.hyde import HydeRetriever
from memarch.modules.retrievers.mmr import MMRRetriever
from memarch.modules.stores.json_store import JsonStore
from memarch.pipeline.episodes import Query
from memarch.pipeline.registry import REGISTRY
from memarch.pipeline.retrieval import count_words
from retriever_helpers import ALL_LM_FREE, FILLER, fill, filled_store, item


@pytest.fixture
def store(hash_resources):
    return filled_store(hash_resources)


# -- registration ----------------------------------------------------------------------------------
def test_registered_in_order_with_capabilities():
    assert REGISTRY.names("retriever") == ["hybrid", "contrastive", "cbr_rerank", "graph", "hyde", "mmr", "session"]
    assert REGISTRY.get("retriever", "graph").requires_store == frozenset({"graph"})
    assert REGISTRY.get("retriever", "hyde").needs_lm
    cbr = REGISTRY.get("retriever", "cbr_rerank")
    assert cbr.uses_lm and not cbr.needs_lm
    assert not REGISTRY.get("retriever", "hybrid").uses_lm


def test_config_defaults_follow_automem_and_unknown_keys_warn(hash_resources, caplog):
    assert ContrastiveRetriever(hash_resources).settings == {
        "success_k": 3, "success_weight": 0.6, "failure_k": 2, "failure_weight": 0.4, "content_weight": 0.7}
    assert CBRRerankRetriever(hash_resources).settings == {"content_weight": 0.7, "candidates": 15, "cbr_weight": 0.5}
    assert GraphRetriever(hash_resources).settings == {
        "seeds": 3, "edge_types": ("SIMILAR", "COOCCURS", "REINFORCES"), "hops": 1, "decay": 0.7, "min_score": 0.1}
    assert MMRRetriever(hash_resources).settings == {"recall_factor": 2, "min_recall": 20, "mmr_lambda": 0.5}
    assert HydeRetriever(hash_resources).settings == {"passage_weight": 0.5}
    with caplog.at_level(logging.WARNING):
        r = MMRRetriever(hash_resources, mmr_lambda="0.3", lambdaa=1)
    assert r.settings["mmr_lambda"] == 0.3 and "lambdaa" in caplog.text
    with pytest.raises(MemarchError):
        HybridRetriever(hash_resources, pool="many")


# -- BM25 ------------------------------------------------------------------------------------------
def test_bm25_scores_equal_rank_bm25():
    import rank_bm25

    texts = ["the cat sat on the mat", "dog and cat play", "a bird in the sky sky sky", "",
             "mat mat mat cat", "cat", "sky blue sky", "the dog chased the cat up the tree"]
    corpus = [tokenize(t) for t in texts]
    reference = rank_bm25.BM25Okapi(corpus)
    index = BM25Index(corpus)
    for query in ["cat mat", "sky cat cat", "tree dog", "unknown words", "cat"]:
        q = tokenize(query)
        np.testing.assert_allclose(index.scores(q), reference.get_scores(q), rtol=1e-12, atol=1e-12)
    # "cat" is in 5 of 8 documents: negative idf floored at epsilon x mean idf, as rank-bm25 does.
    assert np.all(index.scores(["cat"]) >= 0) and reference.idf["cat"] == pytest.approx(
        index.idf[index.vocab["cat"]])


def test_usage_only_update_keeps_the_bm25_postings(store):
    first = lexical_index(store, "default")
    slots = first.bm25.slots
    it = store.list()[3]
    it.usage.retrieved += 1
    store.update(it)  # what a manager does after a read: the version moves, no text changes
    second = lexical_index(store, "default")
    assert second is first and second.bm25.slots == slots  # updated in place, nothing re-tokenised
    it.text = "a brand new text about zebras"
    store.update(it)
    third = lexical_index(store, "default")
    assert third.bm25.slots == slots + 1 and third.search("zebras", 1)[0][0].id == it.id


def test_incremental_rebuild_scores_like_rank_bm25_on_the_current_items(store):
    import rank_bm25

    lexical_index(store, "default")
    gone = store.list()[0]
    store.delete(gone.id)  # its terms stay in the shared vocabulary but must not count
    changed = store.list()[0]
    changed.text = "fridge fridge zebra stove"
    store.update(changed)
    store.add([item("milk and eggs for the zebra", "ep10")])
    index = lexical_index(store, "default")
    assert gone.id not in {it.id for it in index.items}
    reference = rank_bm25.BM25Okapi([tokenize(it.text) for it in index.items])
    live = sorted(index.slot_of.values(), key=lambda j: index.bm25._key[j])  # slots in the order of index.items
    for q in ["fridge milk", "zebra stove eggs", tokenize(gone.text)[0]]:
        np.testing.assert_allclose(index.bm25.scores(tokenize(q))[live], reference.get_scores(tokenize(q)),
                                   atol=1e-12)


def test_tokenize_lowercases_and_drops_stopwords():
    assert tokenize("Where DID Caroline go, in 2023?") == ["caroline", "go", "2023"]


def test_lexical_index_cached_until_store_changes(store):
    first = lexical_index(store, "default")
    version = first.version
    assert lexical_index(store, "default") is first and first.version == version
    store.add([item("a brand new memory", "ep9")])
    second = lexical_index(store, "default")
    assert second.version == store.version("default") != version
    assert any(it.episode_id == "ep9" for it in second.items)


# -- the common contract ---------------------------------------------------------------------------
@pytest.mark.parametrize("cls", ALL_LM_FREE)
def test_never_returns_items_of_the_episode_being_answered(cls, hash_resources, store):
    q = "take the milk from the fridge then close the fridge"
    open_read = cls(hash_resources).retrieve(Query(q), store, top_k=4)
    assert "ep-self" in [s.item.episode_id for s in open_read.items]  # it is the best match...
    answering = Query(q, episode_id="ep-self")
    got = cls(hash_resources).rank(answering, store, 4)  # ...and rank() itself already drops it
    assert got and all(s.item.episode_id != "ep-self" for s in got)
    read = cls(hash_resources).retrieve(answering, store, top_k=4)
    assert all(s.item.episode_id != "ep-self" for s in read.items)
    assert all(s.item.namespace == "default" for s in read.items)


@pytest.mark.parametrize("store_name", ["vector", "hybrid"])
@pytest.mark.parametrize("cls", ALL_LM_FREE)
def test_no_self_retrieval_on_indexed_stores(cls, store_name, hash_resources):
    s = fill(REGISTRY.get("store", store_name).cls(hash_resources))
    q = Query("take the milk from the fridge then close the fridge", episode_id="ep-self")
    got = cls(hash_resources).rank(q, s, 4)
    assert got and all(x.item.episode_id != "ep-self" and x.item.namespace == "default" for x in got)


@pytest.mark.parametrize("cls", ALL_LM_FREE)
def test_deleted_items_are_not_returned(cls, hash_resources, store):
    best = cls(hash_resources).retrieve(Query("turn on the stove before cooking eggs"), store, top_k=1).items[0]
    store.delete(best.item.id)
    read = cls(hash_resources).retrieve(Query("turn on the stove before cooking eggs"), store, top_k=4)
    assert best.item.id not in read.ids()


@pytest.mark.parametrize("cls", ALL_LM_FREE)
def test_top_k_and_token_budget_honoured(cls, hash_resources, store):
    q = Query("milk fridge eggs stove")
    assert len(cls(hash_resources).retrieve(q, store, top_k=2).items) == 2
    read = cls(hash_resources).retrieve(q, store, top_k=4, context_budget=20)
    assert read.trace["words_used"] <= 20 and count_words(read.context) <= 20
    assert 1 <= len(read.items) <= 4
    assert all("retriever" in read.trace for _ in [0])
    assert all(s.trace for s in read.items)  # every item says why it was returned


# -- hybrid ----------------------------------------------------------------------------------------
def test_hybrid_fuses_ranks_and_traces_both_sides(hash_resources, store):
    read = HybridRetriever(hash_resources).retrieve(Query("stove eggs"), store, top_k=3)
    top = read.items[0]
    assert "stove" in top.item.text and "eggs" in top.item.text
    t = top.trace
    assert t["lexical_rank"] == 1 and t["dense_rank"] is not None
    assert top.score == pytest.approx(1 / (60 + t["dense_rank"]) + 1 / (60 + t["lexical_rank"]))
    assert [s.score for s in read.items] == sorted((s.score for s in read.items), reverse=True)


def test_hybrid_lexical_side_finds_an_exact_rare_term(hash_resources, store):
    store.add([item("the wifi password is zebra42", "ep7")])
    r = HybridRetriever(hash_resources, dense_weight=0.0)
    top = r.retrieve(Query("what is the zebra42 thing"), store, top_k=1).items[0]
    assert top.item.text == "the wifi password is zebra42" and top.trace["lexical_rank"] == 1


# -- contrastive -----------------------------------------------------------------------------------
def test_contrastive_success_and_failure_pools(hash_resources, store):
    got = ContrastiveRetriever(hash_resources).rank(Query("cook eggs on the stove", episode_id="ep-self"), store, 10)
    pools = [s.trace["pool"] for s in got]
    assert pools.count("success") == 2 and pools.count("failure") == 2  # only 2 successes are eligible
    for s in got:
        weight = 0.6 if s.trace["pool"] == "success" else 0.4
        assert s.score == pytest.approx(weight * s.trace["cbr"], abs=1e-6)
        assert s.trace["cbr"] == pytest.approx(max(s.trace["case"], 0.7 * s.trace["content"]), abs=1e-5)
    narrow = ContrastiveRetriever(hash_resources, success_k=1, failure_k=1).rank(Query("cook eggs"), store, 10)
    assert sorted(s.trace["pool"] for s in narrow) == ["failure", "success"]


@pytest.mark.parametrize("store_name,n_tasks,success_share,n", [
    ("json", 6, 0.5, 7), ("vector", 6, 0.5, 7), ("vector", 200, 0.08, 3)])
def test_best_cases_equals_a_brute_force_scan(store_name, n_tasks, success_share, n, hash_resources):
    import random

    from memarch.modules.retrievers._cases import best_cases

    rng = random.Random(7)
    words = "milk fridge eggs stove bread oven door key lamp desk pen cup".split()
    tasks = [" ".join(rng.sample(words, 3)) + f" {j}" for j in range(n_tasks)]
    s = REGISTRY.get("store", store_name).cls(hash_resources)
    s.add([item(" ".join(rng.sample(words, 4)), f"ep{i % 9}",
                "success" if rng.random() < success_share else "failure",
                task=rng.choice(tasks + [None, None])) for i in range(80)])
    emb = hash_resources.embedder
    q = Query("milk eggs stove lamp", episode_id="ep3")
    v = emb.embed_one(q.text)
    skip = HybridRetriever(hash_resources).exclude_fn(q)
    got = best_cases(s, v, "default", n, content_weight=0.7, embedder=emb, exclude=skip,
                     where={"outcome": "success"})
    brute = []
    for it in s.list():
        if skip(it) or it.outcome != "success":
            continue
        content = float(emb.embed_one(it.text) @ v)
        case = float(emb.embed_one(it.fields["task"]) @ v) if it.fields.get("task") else content
        brute.append(max(case, 0.7 * content))
    assert len(brute) > n
    assert [round(m.score, 5) for m in got] == [round(x, 5) for x in sorted(brute, reverse=True)[:n]]
    assert all(m.item.episode_id != "ep3" and m.item.outcome == "success" for m in got)


def test_best_cases_finds_a_case_match_far_down_the_task_ranking(hash_resources):
    from memarch.modules.retrievers._cases import best_cases

    s = JsonStore(hash_resources)
    # 25 tasks closer to the query than the one success's task, all of them failures.
    s.add([item(f"failed attempt {j}", f"f{j}", "failure", task=f"alpha beta t{j}") for j in range(25)])
    s.add([item(f"alpha q{j} w e r t", f"n{j}", "success") for j in range(5)])  # no task: weak content match
    target = item("zzz qqq", "s1", "success", task="alpha zz")
    s.add([target])
    got = best_cases(s, hash_resources.embedder.embed_one("alpha beta"), "default", 1, content_weight=0.7,
                     embedder=hash_resources.embedder, exclude=lambda it: False, where={"outcome": "success"})
    assert got[0].item.id == target.id and got[0].case > got[0].content


def test_case_side_returns_the_current_item_after_an_update(hash_resources, store):
    r = CBRRerankRetriever(hash_resources)
    first = r.rank(Query("cook eggs"), store, 1)[0].item
    newer = first.copy()
    newer.text = "eggs: medium heat, stir often"
    newer.usage.helped_success = 3
    store.update(newer)  # same id, same task, new object
    again = r.rank(Query("cook eggs"), store, 1)[0]
    assert again.item is newer and again.trace["utility"] == pytest.approx(4 / 5)


def test_contrastive_falls_back_without_outcomes(hash_resources):
    s = JsonStore(hash_resources)
    s.add([item(t, f"e{i}") for i, t in enumerate(FILLER)])  # conversation memory: all "unknown"
    got = ContrastiveRetriever(hash_resources).retrieve(Query("bake bread"), s, top_k=4).items
    assert len(got) == 4 and got[0].item.text.startswith("bake bread")
    assert all(x.trace["pool"] == "unlabelled" and x.trace["fallback"] == "no outcome labels" for x in got)

"""The six retrievers: registration, BM25 parity with rank-bm25, no self-retrieval, top_k and
token budget, each retriever's scoring and trace, LM paths with DummyLM (good and malformed)."""
from __future__ import annotations

import logging

import dspy
import numpy as np
import pytest
from dspy.utils.dummies import DummyLM

from memarch.errors import LMRequiredError, MemarchError
from memarch.modules.retrievers._lexical import BM25Index, lexical_index, tokenize
from memarch.modules.retrievers.cbr_rerank import CBRRerankRetriever
from memarch.modules.retrievers.contrastive import ContrastiveRetriever
from memarch.modules.retrievers.graph import GraphRetriever
from memarch.modules.retrievers.hybrid import HybridRetriever
from memarch.modules.retrievers.hyde import HydeRetriever
from memarch.modules.retrievers.mmr import MMRRetriever, mmr_select
from memarch.modules.stores.json_store import JsonStore
from memarch.pipeline.episodes import Query
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.registry import REGISTRY
from memarch.pipeline.resources import Resources
from memarch.pipeline.retrieval import count_tokens

# Filler keeps BM25 idfs meaningful: in a 4-document corpus a term in 2 documents has idf 0.
FILLER = ["the garden needs water every morning", "a train leaves the station at noon",
          "paint the fence with a blue brush", "the library closes early on sunday",
          "bake bread with flour yeast and salt", "the cat sleeps on the warm sofa",
          "music lessons start in september", "clean the windows with vinegar"]


def item(text, ep, outcome="unknown", task=None, ns="default", kind="tip"):
    return MemoryItem(text, kind, episode_id=ep, outcome=outcome, namespace=ns,
                      fields={"task": task} if task else {})


def fill(s):
    s.add([item(t, f"filler{i}") for i, t in enumerate(FILLER)])
    s.add([
        item("take the milk from the fridge then close the fridge", "ep-self", "success", "make breakfast"),
        item("open the fridge before taking the milk", "ep1", "success", "make breakfast with milk"),
        item("the fridge door sticks; pull it hard", "ep2", "failure", "get milk from the fridge"),
        item("turn on the stove before cooking eggs", "ep3", "success", "cook eggs"),
        item("eggs burn if the stove is too hot", "ep4", "failure", "cook eggs"),
        item("milk fridge secret from another user", "ep5", "success", ns="other"),
    ])
    return s


@pytest.fixture
def store(hash_resources):
    return fill(JsonStore(hash_resources))


def lm_resources(hash_resources, answers):
    return Resources(embedder=hash_resources.embedder, cache_dir=hash_resources.cache_dir,
                     lm=DummyLM(answers, adapter=dspy.JSONAdapter()))


class FakeGraphStore(JsonStore):
    """The graph store contract the retriever relies on: ``neighbors`` over weighted typed edges."""

    def __init__(self, resources=None, **config):
        super().__init__(resources, **config)
        self.edges: dict[str, list[tuple[str, str, float]]] = {}

    def link(self, a: str, b: str, edge_type: str, weight: float = 1.0) -> None:
        self.edges.setdefault(a, []).append((b, edge_type, weight))
        self.edges.setdefault(b, []).append((a, edge_type, weight))

    def neighbors(self, item_id, namespace="default", edge_types=None):
        return [e for e in self.edges.get(item_id, []) if edge_types is None or e[1] in edge_types]


ALL_LM_FREE = [HybridRetriever, ContrastiveRetriever, CBRRerankRetriever, MMRRetriever]


# -- registration ----------------------------------------------------------------------------------
def test_registered_in_order_with_capabilities():
    assert REGISTRY.names("retriever") == ["hybrid", "contrastive", "cbr_rerank", "graph", "hyde", "mmr"]
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


def test_usage_only_update_keeps_the_bm25_matrix(store):
    first = lexical_index(store, "default")
    it = store.list()[3]
    it.usage.retrieved += 1
    store.update(it)  # what a manager does after a read: the version moves, no text changes
    second = lexical_index(store, "default")
    assert second is not first and second.bm25 is first.bm25
    it.text = "a brand new text about zebras"
    store.update(it)
    third = lexical_index(store, "default")
    assert third.bm25 is not first.bm25 and third.search("zebras", 1)[0][0].id == it.id


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
    for q in ["fridge milk", "zebra stove eggs", tokenize(gone.text)[0]]:
        np.testing.assert_allclose(index.bm25.scores(tokenize(q)), reference.get_scores(tokenize(q)), atol=1e-12)


def test_tokenize_lowercases_and_drops_stopwords():
    assert tokenize("Where DID Caroline go, in 2023?") == ["caroline", "go", "2023"]


def test_lexical_index_cached_until_store_changes(store):
    first = lexical_index(store, "default")
    assert lexical_index(store, "default") is first
    store.add([item("a brand new memory", "ep9")])
    second = lexical_index(store, "default")
    assert second is not first and any(it.episode_id == "ep9" for it in second.items)


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
    read = cls(hash_resources).retrieve(q, store, top_k=4, budget_tokens=20)
    assert read.trace["tokens_used"] <= 20 and count_tokens(read.context) <= 20
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


# -- cbr_rerank ------------------------------------------------------------------------------------
def test_cbr_without_lm_uses_documented_features(hash_resources, store):
    got = CBRRerankRetriever(hash_resources).rank(Query("cook eggs"), store, 3)
    for s in got:
        t = s.trace
        assert t["rerank"] == "features" and "lm_fallback" not in t
        assert t["features"] == pytest.approx(0.6 * t["overlap"] + 0.4 * t["utility"], abs=1e-5)
        assert s.score == pytest.approx(0.5 * t["cbr"] + 0.5 * t["features"], abs=1e-5)
    assert "eggs" in got[0].item.text  # the two "cook eggs" cases match the query exactly


def test_cbr_lm_scores_rerank_candidates(hash_resources, store):
    n = 3
    res = lm_resources(hash_resources, [{"scores": [1, 1, 10]}])
    r = CBRRerankRetriever(res, candidates=n)
    got = r.rank(Query("cook eggs"), store, n)
    assert len(got) == n and r.fallbacks == 0
    top = got[0]
    assert top.trace["rerank"] == "lm" and top.trace["lm_score"] == 10 and top.trace["recall_rank"] == 3
    assert top.score == pytest.approx(0.5 * top.trace["cbr"] + 0.5 * 1.0, abs=1e-5)
    prompt = str(res.lm.history[-1]["messages"])
    assert "learned on task: cook eggs" in prompt  # the case travels with the candidate


def test_cbr_lm_one_corrective_retry_then_features(hash_resources, store, caplog):
    # First answer has the wrong count, the retry parses: the LM path is kept.
    res = lm_resources(hash_resources, [{"scores": [5]}, {"scores": [2, 9]}])
    got = CBRRerankRetriever(res, candidates=2).rank(Query("cook eggs"), store, 2)
    assert [s.trace["lm_score"] for s in got] == [9, 2]
    assert "Your previous answer was rejected" in str(res.lm.history[-1]["messages"])
    # Two unusable answers (not JSON, then out of range): logged fallback to the feature rerank.
    res = lm_resources(hash_resources, [{"scores": "lots"}, {"scores": [0, 11]}])
    r = CBRRerankRetriever(res, candidates=2)
    with caplog.at_level(logging.WARNING):
        got = r.rank(Query("cook eggs"), store, 2)
    assert r.fallbacks == 1 and "LM-free path" in caplog.text
    assert all(s.trace["rerank"] == "features" and s.trace["lm_fallback"] for s in got)


# -- graph -----------------------------------------------------------------------------------------
@pytest.fixture
def graph_store(hash_resources):
    g = FakeGraphStore(hash_resources)
    g.add([item(t, f"filler{i}") for i, t in enumerate(FILLER)])
    a, b, c, d, e = (item("Caroline works as a school counselor", "s1"),
                     item("she adopted a dog named Max", "s2"),
                     item("counselling conferences happen in spring", "s3"),
                     item("Max was written down by this very episode", "self"),
                     item("weak link target", "s4"))
    g.add([a, b, c, d, e])
    g.link(a.id, b.id, "COOCCURS", 1.0)
    g.link(a.id, c.id, "DEPENDS", 1.0)  # not an expansion edge
    g.link(a.id, d.id, "SIMILAR", 1.0)
    g.link(a.id, e.id, "SIMILAR", 0.01)  # below min_score after decay
    g.ids = {"a": a.id, "b": b.id, "c": c.id, "d": d.id, "e": e.id}
    return g


def test_graph_expands_one_hop_with_decay_and_records_path(hash_resources, graph_store):
    ids = graph_store.ids
    r = GraphRetriever(hash_resources, seeds=1)
    got = r.rank(Query("where does Caroline work as counselor", episode_id="self"), graph_store, 10)
    by_id = {s.item.id: s for s in got}
    seed = by_id[ids["a"]]
    assert seed.trace["hop"] == 0 and seed.trace["path"] == [ids["a"]]
    hop = by_id[ids["b"]]
    assert hop.trace == {**hop.trace, "seed": ids["a"], "hop": 1, "edge_type": "COOCCURS",
                         "path": [ids["a"], ["COOCCURS", ids["b"]]]}
    assert hop.score == pytest.approx(seed.score * 0.7 * 1.0)
    assert ids["c"] not in by_id  # DEPENDS is not followed
    assert ids["d"] not in by_id  # written by the episode being answered, even when reached by an edge
    assert ids["e"] not in by_id  # under min_score
    assert len(got) == 2


def test_graph_heavy_edge_never_lifts_a_neighbour_above_its_source(hash_resources, graph_store):
    ids = graph_store.ids
    graph_store.edges[ids["a"]] = [(ids["b"], "REINFORCES", 5.0)]
    got = {s.item.id: s for s in GraphRetriever(hash_resources, seeds=1).rank(
        Query("Caroline works as a school counselor"), graph_store, 5)}
    assert got[ids["b"]].score == pytest.approx(got[ids["a"]].score)
    assert got[ids["b"]].trace["edge_weight"] == 5.0


def test_graph_on_the_real_graph_store(hash_resources):
    from memarch.modules.stores.graph import GraphStore

    g = GraphStore(hash_resources)
    counselor = item("Caroline works as a school counselor in Boston", "s1", kind="fact")
    dog = item("Caroline adopted a dog named Max last year", "s2", kind="fact")
    own = item("Caroline told this very session about her counselor job", "s-self", kind="fact")
    g.add([counselor, dog, own, item("the bakery sells sourdough bread", "s4", kind="fact")])
    read = GraphRetriever(hash_resources).retrieve(
        Query("what is Caroline's job as counselor?", episode_id="s-self"), g, top_k=4)
    assert own.id not in read.ids() and read.ids()[0] == counselor.id
    via = {s.item.id: s.trace for s in read.items if s.trace["hop"] == 1}
    assert dog.id in via and via[dog.id]["edge_type"] == "COOCCURS"
    assert via[dog.id]["path"][0] == via[dog.id]["seed"] and via[dog.id]["path"][-1][1] == dog.id


def test_graph_needs_a_graph_store(hash_resources, store):
    with pytest.raises(MemarchError, match="graph-family store"):
        GraphRetriever(hash_resources).retrieve(Query("milk"), store)


# -- hyde ------------------------------------------------------------------------------------------
def test_hyde_requires_an_lm(hash_resources, store):
    with pytest.raises(LMRequiredError):
        HydeRetriever(hash_resources).retrieve(Query("milk"), store)


def test_hyde_searches_with_query_and_passage_average(hash_resources, store):
    # The query alone shares no word with the stove memory; the hypothetical passage does.
    q = Query("what should happen before breakfast preparation starts?")
    res = lm_resources(hash_resources, [{"passage": "turn on the stove before cooking eggs"}])
    got = HydeRetriever(res).retrieve(q, store, top_k=2).items
    assert got[0].item.text == "turn on the stove before cooking eggs"
    assert got[0].trace["passage"] == "turn on the stove before cooking eggs" and not got[0].trace["lm_fallback"]
    emb = hash_resources.embedder
    mixed = emb.embed_one(q.text) + emb.embed_one("turn on the stove before cooking eggs")
    mixed /= np.linalg.norm(mixed)
    assert got[0].score == pytest.approx(float(emb.embed_one(got[0].item.text) @ mixed), abs=1e-5)


def test_hyde_malformed_answer_falls_back_to_the_query(hash_resources, store):
    res = lm_resources(hash_resources, [{"passage": ""}, {"passage": "   "}])
    r = HydeRetriever(res)
    q = Query("take the milk from the fridge", episode_id="ep-self")
    got = r.retrieve(q, store, top_k=3).items
    plain = [it.id for it, _ in store.search(hash_resources.embedder.embed_one(q.text), 3,
                                             exclude=r.exclude_fn(q))]
    assert r.fallbacks == 1 and [s.item.id for s in got] == plain
    assert all(s.trace["lm_fallback"] and s.trace["passage"] is None for s in got)


# -- mmr -------------------------------------------------------------------------------------------
def test_mmr_select_trades_relevance_for_diversity():
    relevance = np.array([0.9, 0.89, 0.5])
    sim = np.array([[1.0, 0.99, 0.0], [0.99, 1.0, 0.0], [0.0, 0.0, 1.0]])
    assert [j for j, _, _ in mmr_select(relevance, sim, 2, 1.0)] == [0, 1]
    assert [j for j, _, _ in mmr_select(relevance, sim, 2, 0.5)] == [0, 2]


def test_mmr_skips_a_near_duplicate(hash_resources, store):
    store.add([item("turn on the stove before cooking the eggs", "ep8")])
    q = Query("turn on the stove before cooking eggs please")
    plain = MMRRetriever(hash_resources, mmr_lambda=1.0).retrieve(q, store, top_k=2).items
    diverse = MMRRetriever(hash_resources).retrieve(q, store, top_k=2).items
    assert all("stove" in s.item.text for s in plain)
    assert "stove" in diverse[0].item.text and "stove" not in diverse[1].item.text
    assert diverse[1].trace["redundancy"] < plain[1].trace["redundancy"]
    assert diverse[0].trace["recall"] == 20


# -- real embedder ---------------------------------------------------------------------------------
@pytest.mark.integration
@pytest.mark.parametrize("cls", [HybridRetriever, MMRRetriever])
def test_semantic_match_beats_unrelated_with_minilm(cls, resources):
    s = JsonStore(resources)
    related = item("Caroline is employed as a school counselor", "e1")
    unrelated = item("the recipe needs two cups of flour", "e2")
    s.add([related, unrelated] + [item(t, f"f{i}") for i, t in enumerate(FILLER)])
    got = cls(resources).retrieve(Query("What is Caroline's job?"), s, top_k=len(FILLER) + 2).ids()
    assert got.index(related.id) < got.index(unrelated.id)
    assert got[0] == related.id


# -- wired into MemoryProgram ----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["hybrid", "contrastive", "cbr_rerank", "graph", "mmr"])
def test_every_lm_free_retriever_reads_through_a_memory_program(name, hash_resources):
    from memarch.pipeline.architecture import Architecture
    from memarch.pipeline.episodes import Episode, Step
    from memarch.pipeline.program import MemoryProgram

    def episode(i, obj, outcome):
        return Episode(id=f"ep{i}", task=f"put a clean {obj} in the fridge", outcome=outcome, steps=[
            Step("s1", f"take {obj} from countertop", f"You pick up the {obj}."),
            Step("s2", f"clean {obj} with sinkbasin", f"You clean the {obj}."),
            Step("s3", "open fridge", "You open the fridge."),
            Step("s4", f"put {obj} in fridge", "Done." if outcome == "success" else "Nothing happens.")])

    program = MemoryProgram(Architecture(("trajectory",), "graph", name, "lightweight"),
                            resources=hash_resources, top_k=3, budget_tokens=120)
    for i, (obj, outcome) in enumerate([("apple", "success"), ("tomato", "failure"), ("egg", "success")]):
        program.write(episode(i, obj, outcome))
    read = program.read(Query("put a clean egg in the fridge", episode_id="ep2"))
    assert read.trace["retriever"] == name and 0 < len(read.items) <= 3
    assert read.trace["tokens_used"] <= 120
    assert all(s.item.episode_id != "ep2" and s.trace for s in read.items)

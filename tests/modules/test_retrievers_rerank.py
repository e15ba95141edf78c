"""Retrievers, part two: cbr_rerank, graph, hyde and mmr (LM paths with DummyLM, good and malformed),
the real embedder, and every LM-free retriever through a MemoryProgram."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from memarch.errors import LMRequiredError, MemarchError
from memarch.modules.retrievers.cbr_rerank import CBRRerankRetriever
from memarch.modules.retrievers.graph import GraphRetriever
from memarch.modules.retrievers.hybrid import HybridRetriever
from memarch.modules.retrievers.hyde import HydeRetriever
from memarch.modules.retrievers.mmr import MMRRetriever, mmr_select
from memarch.modules.stores.json_store import JsonStore
from memarch.pipeline.episodes import Query
from retriever_helpers import FILLER, FakeGraphStore, filled_store, item, lm_resources


@pytest.fixture
def store(hash_resources):
    return filled_store(hash_resources)


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
                            resources=hash_resources, top_k=3, context_budget=120)
    for i, (obj, outcome) in enumerate([("apple", "success"), ("tomato", "failure"), ("egg", "success")]):
        program.write(episode(i, obj, outcome))
    read = program.read(Query("put a clean egg in the fridge", episode_id="ep2"))
    assert read.trace["retriever"] == name and 0 < len(read.items) <= 3
    assert read.trace["words_used"] <= 120
    assert all(s.item.episode_id != "ep2" and s.trace for s in read.items)

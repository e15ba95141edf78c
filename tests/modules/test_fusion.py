"""The hybrid retriever's ``fusion`` knob: 0 (default) reciprocal rank, 1 weighted z-scores of the
sides' raw scores (the unranked side's floor for an item one side missed); the fused score equals a
direct computation from each side's hits; the z-scores let a side's large lead win where RRF ties;
the knob is in the full space and in `memarch space --markdown`."""
from __future__ import annotations

import numpy as np
import pytest

from memarch.modules.retrievers.hybrid import HybridRetriever
from memarch.modules.stores.json_store import JsonStore
from memarch.modules.stores.lexical import lexical_index
from memarch.pipeline.episodes import Query
from memarch.pipeline.items import MemoryItem

TEXTS = ["Ann works at the bakery on Rua Augusta in Lisbon", "the bakery opens at six every morning",
         "Ann likes coffee and pastries", "the weather was grey all week", "a film about sailing boats",
         "Ann and Bob went sailing on the Tagus", "Bob works at a bank"]


def _store(resources):
    store = JsonStore(resources)
    store.add([MemoryItem(t, "turn", episode_id=f"e{i}", source_ids=[f"D1:{i}"]) for i, t in enumerate(TEXTS)])
    return store


def _z(values: list[float]) -> list[float]:
    v = np.array(values, dtype=float)
    return list((v - v.mean()) / v.std()) if v.std() > 0 else [0.0] * len(v)


@pytest.mark.parametrize("dense_weight", [1.0, 1.5])
def test_zscore_equals_a_direct_computation(hash_resources, dense_weight):
    store = _store(hash_resources)
    query = Query("where does Ann work")
    ranked = HybridRetriever(hash_resources, fusion=1, dense_weight=dense_weight, pool=10).rank(query, store, 7)
    vector = hash_resources.embedder.embed_one(query.text)
    dense = store.search(vector, 10, "default")
    lexical = lexical_index(store, "default").search(query.text, 10)
    zd = dict(zip((it.id for it, _ in dense), _z([s for _, s in dense])))
    zl = dict(zip((it.id for it, _ in lexical), _z([s for _, s in lexical])))
    expected = {iid: dense_weight * zd.get(iid, min(zd.values())) + zl.get(iid, min(zl.values()))
                for iid in set(zd) | set(zl)}
    assert {s.item.id: s.score for s in ranked} == pytest.approx({i: expected[i] for i in (s.item.id for s in ranked)})
    assert [s.item.id for s in ranked] == sorted(expected, key=lambda i: (-expected[i], i))[:7]
    assert all("zscore" in s.trace and "rrf" not in s.trace for s in ranked)


def test_rrf_stays_the_default(hash_resources):
    store = _store(hash_resources)
    query = Query("where does Ann work")
    default = HybridRetriever(hash_resources).rank(query, store, 5)
    explicit = HybridRetriever(hash_resources, fusion=0).rank(query, store, 5)
    assert HybridRetriever.DEFAULTS["fusion"] == 0
    assert [(s.item.id, s.score) for s in default] == [(s.item.id, s.score) for s in explicit]
    assert all("rrf" in s.trace for s in default)


def test_a_large_lead_counts_under_zscores_not_under_rrf():
    from memarch.modules.retrievers.hybrid import _zscore_fusion

    class It:
        def __init__(self, iid):
            self.id = iid

    a, b, c, d = It("a"), It("b"), It("c"), It("d")
    # dense: b barely ahead of a; lexical: a far ahead of b (RRF sees 1st/2nd on both sides alike)
    dense = [(b, 0.51), (a, 0.50), (c, 0.10), (d, 0.09)]
    lexical = [(a, 9.0), (b, 1.0), (c, 0.9), (d, 0.8)]
    fused, _, _ = _zscore_fusion((("dense", dense), ("lexical", lexical)), {"dense_weight": 1.0, "lexical_weight": 1.0})
    assert fused["a"] > fused["b"]


def test_the_knob_is_in_the_full_space():
    from memarch.pipeline.registry import REGISTRY

    knobs = {k.name: k for k in REGISTRY.get("retriever", "hybrid").knobs}
    assert knobs["fusion"].kind == "int" and (knobs["fusion"].low, knobs["fusion"].high) == (0, 1)
    assert knobs["fusion"].default == 0


def test_the_diagnosis_read_keeps_each_sides_rank_of_the_gold(hash_resources):
    """`gold_rank` records where the dense and lexical sides ranked the lost gold (the evidence of the
    guided search's fusion move); a retriever without sides records neither."""
    from memarch.benchmarks.evaluation.attribution import gold_rank
    from memarch.modules.retrievers.mmr import MMRRetriever

    store = _store(hash_resources)
    query = Query("where does Ann work")
    hybrid = HybridRetriever(hash_resources, pool=10)

    def read(q, top_k, context_budget):
        return hybrid.retrieve(q, store, top_k=top_k, context_budget=context_budget)

    deeper = read(query, 20, 1 << 30)
    gold = deeper.items[2].item  # the gold at rank 3 of the deeper read
    facts = gold_rank(read, query, gold.source_ids, 2, 2)
    assert facts["gold_rank"] == 3
    assert (facts["gold_dense_rank"], facts["gold_lexical_rank"]) == (deeper.items[2].trace["dense_rank"],
                                                                       deeper.items[2].trace["lexical_rank"])
    mmr = MMRRetriever(hash_resources)
    plain = gold_rank(lambda q, top_k, context_budget: mmr.retrieve(q, store, top_k=top_k, context_budget=context_budget),
                      query, gold.source_ids, 2, 2)
    assert "gold_dense_rank" not in plain and "gold_lexical_rank" not in plain

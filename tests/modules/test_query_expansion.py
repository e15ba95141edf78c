"""LM-free query expansion (pseudo-relevance feedback on the BM25 side, the hybrid retriever's
``prf_*`` knobs): off by default; on, the terms of the best hits pull in an item that shares no word
with the query; feedback never comes from an item the query may not read."""
from __future__ import annotations

from memarch.modules.retrievers.hybrid import HybridRetriever
from memarch.modules.stores.json_store import JsonStore
from memarch.modules.stores.lexical import lexical_index, tokenize
from memarch.pipeline.episodes import Query
from memarch.pipeline.items import MemoryItem

TEXTS = ["Ann goes to work at the bakery on Rua Augusta in Lisbon",
         "the bakery on Rua Augusta opens at six",
         "pastries and coffee for breakfast",
         "the weather was grey all week",
         "a film about sailing boats"]


def _store(resources, texts=TEXTS):
    store = JsonStore(resources)
    store.add([MemoryItem(t, "turn", episode_id=f"e{i}", source_ids=[f"D1:{i}"]) for i, t in enumerate(texts)])
    return store


def test_prf_pulls_in_an_item_that_shares_no_word_with_the_query(hash_resources):
    store = _store(hash_resources)  # the index holds its store weakly
    index = lexical_index(store, "default")
    plain = [it.text for it, _ in index.search("where does Ann work", 5)]
    assert plain == [TEXTS[0]]  # only the item naming Ann or work scores on BM25
    expanded = [it.text for it, _ in index.search("where does Ann work", 5, prf=(1, 5, 0.5))]
    assert expanded[0] == TEXTS[0] and TEXTS[1] in expanded  # "bakery", "rua", "augusta" came back
    weights = index.expand(tokenize("where does Ann work"), docs=1, terms=5, weight=0.5)
    assert weights["ann"] == 1.0 and weights["work"] == 1.0
    assert max(w for t, w in weights.items() if t not in ("ann", "work")) == 0.5


def test_prf_is_off_by_default_and_changes_the_hybrid_lexical_ranking(hash_resources):
    store = _store(hash_resources)
    query = Query("where does Ann work")
    default = HybridRetriever(hash_resources).rank(query, store, 5)
    assert all(s.trace["lexical_rank"] is None for s in default if s.item.text == TEXTS[1])
    assert HybridRetriever.DEFAULTS["prf_terms"] == 0
    prf = HybridRetriever(hash_resources, prf_terms=5, prf_docs=1, prf_weight=0.5).rank(query, store, 5)
    assert next(s for s in prf if s.item.text == TEXTS[1]).trace["lexical_rank"] == 2


def test_feedback_comes_only_from_items_the_query_may_read(hash_resources):
    store = _store(hash_resources)
    own = MemoryItem("Ann goes to work at the secret lab on Marte street", "turn", episode_id="asking",
                     source_ids=["D2:0"])
    store.add([own, MemoryItem("the secret lab on Marte street is closed", "turn", episode_id="x",
                               source_ids=["D2:1"])])
    query = Query("where does Ann work", episode_id="asking")
    ranked = HybridRetriever(hash_resources, prf_terms=5, prf_docs=1, prf_weight=0.5).rank(query, store, 7)
    assert own.id not in {s.item.id for s in ranked}
    lab = next(s for s in ranked if s.item.text.startswith("the secret lab"))
    assert lab.trace["lexical_rank"] is None  # "lab", "marte" were never fed back from the query's own item

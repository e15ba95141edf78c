"""`SessionIndex` (the session retriever's BM25 over whole sessions, re-indexing only the sessions whose
items changed) scores exactly as a `BM25Index` built afresh over the same session documents, through
random writes, deletions, text changes and eligibility changes; and the sentence packer's remembered
sentence rows give the cosines of a fresh embedding."""
from __future__ import annotations

import random

import numpy as np

from memarch.modules.retrievers._packing import _dense_cosines
from memarch.modules.retrievers._sentences import Sentences
from memarch.modules.retrievers._session_index import SessionIndex
from memarch.modules.stores.vector import VectorStore
from memarch.modules.stores.lexical import BM25Index, tokenize
from memarch.pipeline.episodes import Query
from memarch.pipeline.items import MemoryItem

WORDS = "ann bob lisbon bakery cello moved sister job paris may june dog cat red blue".split()


def _fresh(groups, items, store, ns, terms):
    names = sorted(groups)
    docs = [[t for i in sorted(groups[g], key=lambda i: store.position(i, ns)) for t in tokenize(items[i].text)]
            for g in names]
    scores = dict(zip(names, BM25Index(docs).scores(terms)))
    return np.array([scores[g] for g in groups])


def test_incremental_session_scores_equal_a_fresh_index(hash_resources):
    rng = random.Random(7)
    store, ns, index = VectorStore(hash_resources), "conv", SessionIndex("conv")
    n = 0
    for step in range(60):
        op = rng.random()
        live = [it for it in store.list(ns)]
        if op < 0.6 or not live:  # a new session's items
            store.add([MemoryItem(" ".join(rng.choices(WORDS, k=rng.randint(2, 9))), "turn", id=f"i{n + j}",
                                  namespace=ns, episode_id=f"s{step % 9}") for j in range(rng.randint(1, 4))])
            n += 4
        elif op < 0.8:  # an item's text changes in place of the record
            it = rng.choice(live)
            store.update(MemoryItem(" ".join(rng.choices(WORDS, k=4)), "turn", id=it.id, namespace=ns,
                                    episode_id=it.episode_id))
        else:
            store.delete(rng.choice(live).id, ns)
        live = store.list(ns)
        if not live:
            continue
        items = {it.id: it for it in live}
        hidden = rng.choice([None, *{it.episode_id for it in live}])  # a query's own session is not eligible
        groups: dict[str, list[str]] = {}
        for it in sorted(live, key=lambda it: rng.random()):  # any order of the groups' members
            if it.episode_id != hidden:
                groups.setdefault(it.episode_id, []).append(it.id)
        if not groups:
            continue
        terms = rng.choices(WORDS, k=3)
        got = index.scores(groups, items, store, terms)
        assert np.array_equal(got, _fresh(groups, items, store, ns, terms)), step
        assert np.array_equal(index.scores(groups, items, store, terms), got)  # the unchanged path


def test_remembered_sentence_rows_give_the_fresh_cosines(hash_resources):
    embedder = hash_resources.embedder
    texts = ["Ann moved to Lisbon.", "She bakes bread.", "Bob plays the cello.", "She bakes bread."]
    query = Query("where does Ann live?")
    memo = Sentences.of(hash_resources.texts)
    first = _dense_cosines(query, texts, embedder, memo)
    vectors = np.asarray(embedder.embed(texts), dtype=float)
    qv = np.asarray(embedder.embed_one(query.text), dtype=float)
    expected = vectors @ qv / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(qv))
    assert np.array_equal(first, expected)
    assert np.array_equal(_dense_cosines(query, texts[::-1], embedder, memo), expected[::-1])  # from the memo

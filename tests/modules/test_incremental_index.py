"""Read caches updated in place after writes (BM25 postings, dense rows) give exactly what a rebuild
gives, through random sequences of add / replace / update / delete / supersede, and the store's
change journal says when a rebuild is due instead."""
from __future__ import annotations

import numpy as np
import pytest

from memarch.modules.retrievers import _cases
from memarch.modules.stores import lexical as _lexical
from memarch.modules.stores.lexical import BM25Index, LexicalIndex, lexical_index, tokenize
from memarch.modules.retrievers.cbr_rerank import CBRRerankRetriever
from memarch.modules.retrievers.contrastive import ContrastiveRetriever
from memarch.modules.retrievers.hybrid import HybridRetriever
from memarch.modules.stores._dense_rows import DenseRows
from memarch.modules.stores._journal import ChangeJournal
from memarch.modules.stores.graph import GraphStore
from memarch.modules.stores.hybrid import HybridStore
from memarch.modules.stores.json_store import JsonStore
from memarch.pipeline.episodes import Query
from memarch.pipeline.items import MemoryItem

WORDS = ("fridge milk stove eggs garden water train station fence paint bread flour cat sofa "
         "music window vinegar key door lamp").split()
QUERIES = ["milk in the fridge", "paint the fence", "eggs on the stove", "cat sofa music", "water the garden",
           "key door lamp window", "bread flour"]


def _text(rng: np.random.Generator, serial: int) -> str:
    # Few words, so BM25 ties abound; the serial keeps texts (hence dense scores) distinct.
    words = rng.choice(WORDS, size=int(rng.integers(2, 7)))
    return " ".join(words) + f" n{serial}"


def _item(rng: np.random.Generator, serial: int, ns: str = "default") -> MemoryItem:
    return MemoryItem(_text(rng, serial), "tip", episode_id=f"ep{serial % 7}", namespace=ns,
                      outcome=("success", "failure")[serial % 2], fields={"task": WORDS[serial % 5]})


def _step(store, rng: np.random.Generator, serial: int) -> str:
    """One random write, as managers and apps make them; its name."""
    active = store.list()
    gone = store.tombstones()
    op = rng.choice(["add", "add", "batch", "retext", "usage", "delete", "supersede", "replace", "revive",
                     "in_place"])
    if op in ("retext", "usage", "delete", "supersede", "replace", "in_place") and len(active) < 3:
        op = "add"
    if op == "revive" and not gone:
        op = "add"
    pick = active[int(rng.integers(len(active)))] if active else None
    if op == "add":
        store.add([_item(rng, serial)])
    elif op == "batch":
        store.add([_item(rng, serial * 10 + j) for j in range(int(rng.integers(2, 5)))])
    elif op == "retext":
        pick.text = _text(rng, serial)
        store.update(pick)
    elif op == "usage":
        pick.usage.retrieved += 1
        store.update(pick)
    elif op == "delete":
        store.delete(pick.id, reason="pruned")
    elif op == "supersede":
        store.delete(pick.id, status="superseded", related=[active[0].id])
    elif op == "replace":  # add() with an existing id, new text and task
        store.add([MemoryItem(_text(rng, serial), "tip", id=pick.id, episode_id=pick.episode_id,
                              fields={"task": WORDS[5 + serial % 3]})])
    elif op == "revive":  # a tombstoned id comes back (keeps its place in the store's order)
        old = gone[int(rng.integers(len(gone)))]
        store.add([MemoryItem(_text(rng, serial), "tip", id=old.id, episode_id=old.episode_id)])
    else:  # a manager flips the stored object, then tells the store
        pick.status = "deleted"
        store.update(pick)
    return str(op)


def _from_scratch(store, fn):
    """``fn()`` with every read cache of ``store`` emptied, then the incremental caches put back."""
    saved = [(part, dict(part)) for part in (store.caches.part(m.__name__) for m in (_lexical, _cases))]
    for part, _ in saved:
        part.clear()
    dense = dict(store._dense_cache)
    store._dense_cache.clear()
    try:
        return fn()
    finally:
        for part, caches in saved:
            part.clear()
            part.update(caches)
        store._dense_cache.clear()
        store._dense_cache.update(dense)


def _hits(retrieval):
    return [(s.item.id, s.score) for s in retrieval.items]


@pytest.mark.parametrize("store_cls", [JsonStore, HybridStore, GraphStore])
def test_incremental_reads_equal_rebuilt_ones_through_random_writes(store_cls, hash_resources):
    rng = np.random.default_rng(13)
    store = store_cls(hash_resources)
    store.add([_item(rng, i) for i in range(40)] + [_item(rng, 1000, ns="other")])
    retrievers = [HybridRetriever(hash_resources, pool=10), ContrastiveRetriever(hash_resources),
                  CBRRerankRetriever(hash_resources)]
    for r in retrievers:
        r.retrieve(Query("warm up"), store)
    index = lexical_index(store, "default")
    tasks = _cases.task_index(store, "default", hash_resources.embedder)
    rows = store._dense_cache.get("default")
    ops = set()
    for step in range(60):
        ops.add(_step(store, rng, 100 + step))
        for text in QUERIES[step % 3::3]:
            q = Query(text, episode_id=f"ep{step % 7}")
            for r in retrievers:
                assert _hits(r.retrieve(q, store, top_k=4)) == _from_scratch(
                    store, lambda: _hits(r.retrieve(q, store, top_k=4))), (step, text, r.name)
            vec = hash_resources.embedder.embed_one(text)
            assert store.search(vec, 6) == _from_scratch(store, lambda: store.search(vec, 6))
            lexical = lexical_index(store, "default").search(text, 8)
            assert lexical == LexicalIndex(store, "default").search(text, 8)
    assert lexical_index(store, "default") is index  # caught up in place all along, never rebuilt
    assert _cases.task_index(store, "default", hash_resources.embedder) is tasks
    if store_cls is JsonStore:
        assert store._dense_cache["default"] is rows
    assert ops >= {"add", "batch", "retext", "usage", "delete", "supersede", "replace", "revive", "in_place"}
    live = {it.id for it in store.list()}
    assert {it.id for it in index.items} == live and index.bm25.size == len(live)
    assert not {it.id for it in lexical_index(store, "other").items} & live  # namespaces stay apart


def test_bm25_add_and_remove_score_like_a_fresh_index():
    rng = np.random.default_rng(3)
    docs = [list(rng.choice(WORDS[:6], size=int(rng.integers(1, 6)))) for _ in range(30)]
    grown = BM25Index(docs[:10])
    for d in docs[10:]:
        grown.add(d)
    for slot in (2, 7, 15, 29):
        grown.remove(slot)
    kept = [d for j, d in enumerate(docs) if j not in (2, 7, 15, 29)]
    fresh = BM25Index(kept)
    live = [j for j in range(30) if j not in (2, 7, 15, 29)]
    for q in (["fridge"], ["milk", "milk", "eggs"], WORDS[:6], ["absent"]):
        assert grown.scores(q)[live].tolist() == fresh.scores(q).tolist()  # bit for bit
        assert np.all(grown.scores(q)[[2, 7, 15, 29]] == 0)


def test_top_breaks_ties_by_key_not_slot():
    docs = [["cat"], ["cat"], ["cat"]] + [[w] for w in WORDS[:5]]
    assert [s for s, _ in BM25Index(docs).top(["cat"], 2)] == [0, 1]
    index = BM25Index()
    index.add_many(docs, keys=[9, 5, 7, 0, 1, 2, 3, 4])
    assert [s for s, _ in index.top(["cat"], 2)] == [1, 2]


def test_journal_forgets_old_writes_and_loads_force_a_rebuild(hash_resources, tmp_path):
    journal = ChangeJournal(max_ids=4)
    for v in range(1, 7):
        journal.record("a", v, [f"i{v}", "shared"])
    assert journal.since("a", 0) is None  # forgotten: the caller must rebuild
    assert journal.since("a", 5) == ["i6", "shared"] and journal.since("a", 6) == []

    rng = np.random.default_rng(0)
    store = JsonStore(hash_resources)
    store.add([_item(rng, i) for i in range(10)])
    store.search(hash_resources.embedder.embed_one("milk"), 3)
    lexical_index(store, "default")
    store.save(tmp_path / "bank")
    store.add([_item(rng, 99)])
    store.load_state(JsonStore.load(tmp_path / "bank", hash_resources).state())
    assert store.changes_since("default", store.version("default")) == []
    assert store.changes_since("default", 0) is None  # records replaced wholesale
    assert all(not it.text.endswith("n99") for it, _ in store.search(hash_resources.embedder.embed_one("n99"), 11))
    assert "n99" not in {w for it in lexical_index(store, "default").items for w in tokenize(it.text)}


def test_dense_rows_rank_ties_in_insertion_order(hash_resources):
    store = JsonStore(hash_resources)
    same = [MemoryItem("identical text", "tip", id=f"t{j}") for j in range(5)]
    store.add(same)
    store.delete("t1")
    store.add([MemoryItem("identical text", "tip", id="t1")])  # revived: back in its old place
    rows = DenseRows.build(store, "default")
    assert [i for i, _ in rows.ranked(hash_resources.embedder.embed_one("identical text"))] == \
        ["t0", "t1", "t2", "t3", "t4"]


def test_interleaved_benchmark_runs_small(capsys):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_interleaved.py"
    spec = importlib.util.spec_from_file_location("bench_interleaved", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = bench.main(["--sizes", "200", "--queries", "3"])
    out = capsys.readouterr().out
    assert {r["store"] for r in rows} == {"json", "vector", "hybrid", "graph"}
    assert ("hybrid", "hybrid") in {(r["store"], r["retriever"]) for r in rows}
    assert all(r["n_static"] == r["n_inter"] == 3 and r["inter_p95"] >= r["inter_p50"] for r in rows)
    assert "inter p50" in out and "x static" in out and "target" in out


def test_words_in_most_documents_score_as_scattered_ones():
    """A word in at least half the documents is added as one dense array (`_dense_weights`), a rarer
    one scattered: the scores are those of a scatter for every word, bit for bit, before and after
    retirements, with repeated query words and expanded (weighted) queries; and `top` keeps its order."""
    rng = np.random.default_rng(5)
    docs = [["common"] + list(rng.choice(WORDS[:8], size=int(rng.integers(0, 5)))) + (["third"] if j % 3 == 0 else [])
            for j in range(60)]
    index = BM25Index(docs)
    for slot in (3, 10, 41):
        index.remove(slot)
    queries = (["common"], ["third", "fridge"], ["common", "common", "third"], {"common": 0.5, "milk": 1.0})
    for q in queries:
        dense = index.scores(q)
        used = any(isinstance(k, tuple) and v is not None for k, v in index._weights[2].items())
        assert used == ("common" in q)  # "common" is in every document, "third" in a third of them
        index._weights = (index._changes, index._weights[1], {t: w for t, w in index._weights[2].items()
                                                             if not isinstance(t, tuple)})
        scattered = np.zeros(index.slots)
        counts = q if isinstance(q, dict) else {t: q.count(t) for t in set(q)}
        for word, mult in counts.items():
            if word in index.vocab:
                docs_, weight = index.term_weights(index.vocab[word])
                scattered[docs_] += weight if mult == 1 else weight * float(mult)
        assert dense.tolist() == scattered.tolist()
    assert [s for s, _ in index.top(["common", "third"], 5)] == sorted(
        range(index.slots), key=lambda j: (-index.scores(["common", "third"])[j], j))[:5]


def test_postings_grow_in_place_and_reads_between_writes_stay_exact():
    """Postings are arrays with room to grow (issue 34: no lists made into arrays again after each
    write). Reads interleaved with single and batched appends, past several doublings of a word's
    room, and with retirements, score bit for bit as an index built at once over the live documents;
    a read's arrays taken before a write keep their values."""
    rng = np.random.default_rng(11)
    docs = [["every"] + list(rng.choice(WORDS[:8], size=int(rng.integers(0, 4)))) for _ in range(200)]
    index = BM25Index(docs[:3])
    before = index.term_weights(index.vocab["every"])[0].copy()
    held = index.term_weights(index.vocab["every"])[0]
    at, removed = 3, set()
    while at < len(docs):
        step = 1 if rng.random() < 0.6 else int(rng.integers(2, 9))
        index.add_many(docs[at:at + step])
        at = min(at + step, len(docs))
        if rng.random() < 0.1:
            slot = int(rng.integers(0, at))
            index.remove(slot)
            removed.add(slot)
        live = [j for j in range(at) if j not in removed]
        fresh = BM25Index([docs[j] for j in live])
        for q in (["every"], ["milk", "every"], WORDS[:8]):
            assert index.scores(q)[live].tolist() == fresh.scores(q).tolist()
    assert held.tolist() == before.tolist()  # an earlier read's view is untouched by later appends
    assert index._count[index.vocab["every"]] == len(docs) <= len(index._post[index.vocab["every"]])

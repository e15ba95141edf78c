"""Context packing (the retrievers' ``pack`` knobs): every option keeps the context within B words
and every line under its item's dated header; sentence packing keeps the query's sentence of a long
item over the filler of a better-ranked one, with the speaker/date lead; window packing brings a
hit turn's neighbouring turns (the reply that holds the answer) without repeating a turn; time
order sorts the same lines by date; the default is today's item packing, so presets, old
architecture files and saved programs read the same."""
from __future__ import annotations

import pytest

from memarch.modules.retrievers import split_sentences
from memarch.modules.retrievers._packing import PACKING, pack_context, pack_sentences, pack_window
from memarch.modules.retrievers._packing_window import turn_index
from memarch.modules.retrievers.hybrid import HybridRetriever
from memarch.modules.stores.vector import VectorStore
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.episodes import Query
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.registry import REGISTRY
from memarch.pipeline.retrieval import ScoredItem, count_words, pack

FILLER = ("Hey, how are you doing today? I hope the week treats you well. The weather was grey again. "
          "We watched a film and ate popcorn. It was a quiet evening.")


def _turn(i: int, text: str, when: str | None, turn: int = 5, speaker: str = "Ann") -> MemoryItem:
    """Turn ``turn`` of session ``i`` (episode ``s{i}``), as the turn encoder writes it."""
    return MemoryItem(f"{speaker} ({when}): {text}", "turn", episode_id=f"s{i}", source_ids=[f"D{i}:{turn}"],
                      event_time=when, fields={"unit": "turn", "speaker": speaker})


def _ranked() -> list[ScoredItem]:
    items = [_turn(0, FILLER, "2023-05-01"),
             _turn(1, FILLER + " By the way, I moved to Lisbon last spring for my new job.", "2023-05-08"),
             _turn(2, "Nothing new here. " * 6, "2023-05-15")]
    return [ScoredItem(it, 1.0 - i / 10) for i, it in enumerate(items)]


def _store_around(resources, ranked: list[ScoredItem]) -> VectorStore:
    """The ranked turns, each between a turn before and two after it in its session."""
    store = VectorStore(resources)
    for s in ranked:
        i, when = int(s.item.episode_id[1:]), s.item.event_time
        store.add([_turn(i, "Anything new this week?", when, turn=4, speaker="Bob"), s.item,
                   _turn(i, "Oh, tell me more about it.", when, turn=6, speaker="Bob"),
                   _turn(i, "Sure, another time.", when, turn=7)])
    return store


@pytest.mark.parametrize("budget", [12, 20, 35, 60, 200])
@pytest.mark.parametrize("packer", [0, 1, 2])
@pytest.mark.parametrize("order", [0, 1])
def test_every_packer_fits_the_budget_and_keeps_each_items_dated_header(budget, packer, order, hash_resources):
    ranked = _ranked()
    store = _store_around(hash_resources, ranked)
    r = pack_context(Query("Where did Ann move for her job?"), ranked, top_k=3, context_budget=budget,
                     config={"pack": packer, "pack_order": order, "pack_window": 2},
                     embedder=hash_resources.embedder, trace={}, store=store)
    assert count_words(r.context) <= budget
    lines = [line for line in r.context.splitlines() if line.strip()]
    assert len(lines) == len(r.items)
    for i, scored in enumerate(r.items):  # items in rank order, each naming its line under time order
        line = lines[scored.trace["line"] if order else i]
        assert line.startswith(f"[turn {scored.item.event_time}]"), line
    if order:
        dates = [s.item.event_time for s in sorted(r.items, key=lambda s: s.trace["line"])]
        assert dates == sorted(dates) and r.trace["order"] == "time"
    if packer == 2:
        assert r.trace["packer"] == "window"
        assert all(isinstance(s.trace["window"], list) for s in r.items)


def test_sentence_packing_keeps_the_answer_of_a_long_item_and_its_lead(hash_resources):
    query = Query("Where did Ann move for her new job?")
    ranked = _ranked()
    items = pack(query, ranked, top_k=3, context_budget=40)
    assert "Lisbon" not in items.context  # the better-ranked filler turn eats the budget
    sent = pack_sentences(query, ranked, context_budget=20, embedder=hash_resources.embedder,
                          rank_weight=1.0, lexical_weight=1.0)
    assert "moved to Lisbon" in sent.context and count_words(sent.context) <= 20
    line = next(line for line in sent.context.splitlines() if "Lisbon" in line)
    assert line.startswith("[turn 2023-05-08] Ann (2023-05-08): ")  # header, then the speaker/date lead
    kept = next(s for s in sent.items if s.item.source_ids == ["D1:5"])
    assert kept.trace["truncated"] and kept.trace["sentences"] == [len(split_sentences(kept.item.text)) - 1]
    assert sent.trace["packer"] == "sentences"


def test_items_is_the_default_and_equals_todays_packing(hash_resources):
    store = VectorStore(hash_resources)
    store.add([_turn(i, f"{FILLER} Detail number {i}.", f"2023-05-{i + 1:02d}") for i in range(8)])
    query = Query("detail number 3")
    default = HybridRetriever(hash_resources).retrieve(query, store, top_k=5, context_budget=60)
    ranked = HybridRetriever(hash_resources).rank(query, store, 5)
    assert default.context == pack(query, ranked, top_k=5, context_budget=60).context
    sentences = HybridRetriever(hash_resources, pack=1).retrieve(query, store, top_k=5, context_budget=60)
    assert sentences.trace["packer"] == "sentences" and sentences.trace["candidates"] == 8  # pool 2 x 5, 8 exist
    assert count_words(sentences.context) <= 60


def test_packing_knobs_are_on_every_retriever_default_items_and_an_old_file_loads():
    names = {k.name for k in PACKING}
    for spec in REGISTRY.specs("retriever"):
        assert names <= {k.name for k in spec.knobs}, spec.name
        assert next(k for k in spec.knobs if k.name == "pack").default == 0
    old = Architecture.from_dict({"schema_version": "1", "encode": ["turn"], "store": "vector",
                                  "retrieve": "hybrid", "manage": "lightweight"})
    assert old.params == () and old.key() == "turn|vector|hybrid|lightweight"
    packed = Architecture.from_dict({**old.to_dict(), "params": {"retrieve.pack": 1}})
    assert packed.key().endswith("|retrieve.pack=1")


def test_the_registry_table_shows_the_pack_knobs():
    from memarch.cli.space import knob_table

    rows = [r for r in knob_table().splitlines() if "pack" in r]
    assert any("`retrieve.pack`" in r and "sentences" in r and "neighbouring turns" in r
               and "int [0, 2], default 0" in r for r in rows), rows
    assert any("`retrieve.pack_window`" in r and "int [1, 3], default 1" in r for r in rows), rows
    assert any("`retrieve.pack_order`" in r and "int [0, 1], default 0" in r for r in rows), rows


def test_default_knobs_pack_exactly_as_today(hash_resources):
    query = Query("Where did Ann move for her job?")
    for budget in (12, 35, 200, None):
        today = pack(query, _ranked(), top_k=2, context_budget=budget, trace={"retriever": "x"})
        for config in ({}, {"pack": 0, "pack_order": 0, "pack_window": 3}):
            r = pack_context(query, _ranked(), top_k=2, context_budget=budget, config=config,
                             embedder=hash_resources.embedder, trace={"retriever": "x"},
                             store=_store_around(hash_resources, _ranked()))
            assert (r.context, r.ids(), r.trace) == (today.context, today.ids(), today.trace)
            assert [s.trace for s in r.items] == [s.trace for s in today.items]


# -- window ---------------------------------------------------------------------------------------

def _trip() -> list[MemoryItem]:
    """Session 3: the question is one turn, its answer the next."""
    when = "2023-06-02"
    return [_turn(3, "Hi Bob! I just came back from a long trip abroad.", when, turn=1),
            _turn(3, "Where did you go?", when, turn=2, speaker="Bob"),
            _turn(3, "To Lisbon.", when, turn=3),
            _turn(3, "How lovely, was the food good?", when, turn=4, speaker="Bob")]


def _trip_store(resources) -> tuple[VectorStore, list[MemoryItem], MemoryItem]:
    store = VectorStore(resources)
    trip = _trip()
    other = _turn(4, FILLER, "2023-06-09")
    store.add([*reversed(trip), other])  # store order is not dialogue order: the index sorts by turn id
    return store, trip, other


def test_window_brings_the_reply_that_holds_the_answer_within_budget(hash_resources):
    store, trip, other = _trip_store(hash_resources)
    query = Query("Where did Ann go on her trip?", episode_id="s9")
    ranked = [ScoredItem(trip[1], 0.9), ScoredItem(other, 0.5)]
    items = pack_context(query, ranked, top_k=2, context_budget=14, config={}, embedder=None, trace={}, store=store)
    assert "Lisbon" not in items.context
    r = pack_context(query, ranked, top_k=2, context_budget=14, config={"pack": 2}, embedder=None, trace={},
                     store=store)
    # the whole window (22 words) does not fit: the turn before goes first, the reply stays
    assert r.context == "[turn 2023-06-02] Bob (2023-06-02): Where did you go? Ann (2023-06-02): To Lisbon."
    assert count_words(r.context) <= 14 and r.ids() == [trip[1].id]
    assert r.items[0].trace["window"] == [trip[2].id] and r.trace["packer"] == "window"
    wide = pack_context(query, ranked, top_k=2, context_budget=200, config={"pack": 2}, embedder=None, trace={},
                        store=store)
    first = wide.context.splitlines()[0]
    assert first == ("[turn 2023-06-02] Ann (2023-06-02): Hi Bob! I just came back from a long trip abroad. "
                     "Bob (2023-06-02): Where did you go? Ann (2023-06-02): To Lisbon.")  # dialogue order
    assert wide.ids() == [trip[1].id, other.id]  # neighbours do not count for top_k
    assert wide.items[0].trace["window"] == [trip[0].id, trip[2].id] and wide.items[1].trace["window"] == []
    three = pack_context(query, ranked, top_k=2, context_budget=200, config={"pack": 2, "pack_window": 3},
                         embedder=None, trace={}, store=store)
    assert three.items[0].trace["window"] == [trip[0].id, trip[2].id, trip[3].id]


def test_window_never_repeats_a_turn_and_reads_only_readable_active_turns(hash_resources):
    store, trip, other = _trip_store(hash_resources)
    query = Query("Where did Ann go?", episode_id="s9")

    def packed(*hits: MemoryItem, window: int = 1, q: Query = query):
        ranked = [ScoredItem(it, 1.0 - i / 10) for i, it in enumerate(hits)]
        return pack_window(q, ranked, top_k=4, context_budget=None, store=store, window=window)

    def shown(r) -> list[str]:
        return [t.text for t in trip if t.text in r.context]

    adjacent = packed(trip[1], trip[2])  # a hit is not a neighbour: it has its own line
    assert adjacent.items[0].trace["window"] == [trip[0].id] and adjacent.items[1].trace["window"] == [trip[3].id]
    overlapping = packed(trip[0], trip[2])  # turn 2 is next to both: shown once
    assert overlapping.items[0].trace["window"] == [trip[1].id] and overlapping.items[1].trace["window"] == [trip[3].id]
    for r in (adjacent, overlapping, packed(trip[3], trip[0], window=3)):
        assert all(r.context.count(text) == 1 for text in shown(r)), r.context
        added = [i for s in r.items for i in s.trace["window"]]
        assert len(added) == len(set(added)) and not set(added) & set(r.ids())
    store.delete(trip[2].id, "default")  # a new store version: the index is rebuilt without the turn,
    assert packed(trip[1]).items[0].trace["window"] == [trip[0].id, trip[3].id]  # the next active one steps in
    assert turn_index(store, "default") is turn_index(store, "default")  # cached per version
    # the retriever never passes a hit of the query's own episode; were it to, its turns are not read
    assert packed(trip[1], q=Query("x", episode_id="s3")).items[0].trace["window"] == []
    trip[2].status = "active"  # behind the store's back: same version, so the cached index is used
    assert packed(trip[1]).items[0].trace["window"] == [trip[0].id, trip[3].id]


def test_window_packs_other_items_and_storeless_reads_like_items(hash_resources):
    query = Query("Where did Ann move for her job?")
    ranked = _ranked()
    chunk = MemoryItem("Ann: one\nBob: two", "turn", episode_id="s1", source_ids=["D1:4", "D1:5"],
                       event_time="2023-05-08", fields={"unit": "chunk"})
    with_chunk = [ScoredItem(chunk, 2.0), *ranked]
    for budget in (12, 35, 200):
        today = pack(query, with_chunk, top_k=3, context_budget=budget)
        bare = pack_context(query, with_chunk, top_k=3, context_budget=budget, config={"pack": 2}, embedder=None,
                            trace={})
        assert (bare.context, bare.ids()) == (today.context, today.ids())
        assert bare.trace["packer"] == "window" and all(s.trace["window"] == [] for s in bare.items)
    store = _store_around(hash_resources, ranked)
    r = pack_context(query, with_chunk, top_k=3, context_budget=200, config={"pack": 2}, embedder=None, trace={},
                     store=store)
    assert r.context.startswith("[turn 2023-05-08] Ann: one\nBob: two\n") and r.items[0].trace["window"] == []
    assert r.items[1].trace["window"]  # the turns get their neighbours


def test_window_through_a_retriever_gets_the_store(hash_resources):
    store, trip, _ = _trip_store(hash_resources)
    r = HybridRetriever(hash_resources, pack=2).retrieve(Query("Where did you go?", episode_id="s9"), store,
                                                         top_k=1, context_budget=200)
    assert r.trace["packer"] == "window" and r.trace["retriever"] == "hybrid" and len(r.items) == 1
    assert r.ids() == [trip[1].id] and r.items[0].trace["window"] == [trip[0].id, trip[2].id]
    assert "To Lisbon." in r.context and r.trace["neighbours"] == 2


# -- order ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("packer", [0, 1, 2])
def test_time_order_sorts_the_same_lines_by_date_undated_last(packer, hash_resources):
    items = [_turn(5, "We adopted a puppy named Rex.", "2023-07-15"),
             _turn(6, "I started painting again.", None),
             _turn(7, "My sister got married in June.", "2023-07-01"),
             _turn(8, "We adopted a cat as well.", "2023-07-08"),
             _turn(9, "Another undated remark.", None)]
    ranked = [ScoredItem(it, 1.0 - i / 10) for i, it in enumerate(items)]
    store = _store_around(hash_resources, ranked)
    query = Query("What did Ann adopt?")
    by = {order: pack_context(query, ranked, top_k=5, context_budget=200, config={"pack": packer, "pack_order": order},
                              embedder=hash_resources.embedder, trace={}, store=store) for order in (0, 1)}
    rank, time = by[0], by[1]
    assert sorted(rank.ids()) == sorted(time.ids()) and len(time.ids()) == 5
    assert sorted(rank.context.splitlines()) == sorted(time.context.splitlines())
    assert time.ids() == rank.ids()  # the items stay in rank order (the rank metrics read it)
    by_line = sorted(time.items, key=lambda s: s.trace["line"])
    assert [s.item.event_time for s in by_line] == ["2023-07-01", "2023-07-08", "2023-07-15", None, None]
    assert [s.item.id for s in by_line][3:] == [items[1].id, items[4].id]  # undated: by rank
    for line, s in zip(time.context.splitlines(), by_line):
        assert line.startswith(header_of(s.item)) and s.item.text.split(": ", 1)[1].split()[0] in line
    assert time.trace["order"] == "time" and "order" not in rank.trace


def header_of(item: MemoryItem) -> str:
    return f"[{item.kind} {item.event_time}]" if item.event_time else f"[{item.kind}]"


def test_time_order_keeps_a_cut_last_item_on_its_own_line(hash_resources):
    ranked = list(reversed(_ranked()))  # newest first: time order reverses the lines
    query = Query("Where did Ann move?")
    rank = pack(query, ranked, top_k=3, context_budget=35)
    time = pack_context(query, _ranked()[::-1], top_k=3, context_budget=35, config={"pack_order": 1}, embedder=None,
                        trace={})
    assert rank.items[-1].trace.get("truncated") and len(rank.items) >= 2
    assert time.context.splitlines() == rank.context.splitlines()[::-1]
    assert time.ids() == rank.ids() and [s.trace["line"] for s in time.items] == [2, 1, 0][-len(rank.ids()):]


def test_guided_search_steps_a_packer_knob_only_under_its_packer():
    from types import SimpleNamespace

    from memarch.optimizers.samplers.guided.numeric import _idle_packing_knob

    def idle(key: str, pack_value: int | None) -> bool:
        params = {} if pack_value is None else {"retrieve.pack": pack_value}
        return _idle_packing_knob(key, SimpleNamespace(param_dict=params), None)

    for packer in (None, 0, 1, 2):
        assert not idle("retrieve.pack", packer) and not idle("retrieve.pack_order", packer)
        assert not idle("retrieve.top_k", packer)
        assert idle("retrieve.pack_window", packer) == (packer != 2)
        for key in ("retrieve.pack_pool", "retrieve.pack_rank_weight", "retrieve.pack_dense_weight",
                    "retrieve.pack_lexical_weight"):
            assert idle(key, packer) == (packer != 1), key

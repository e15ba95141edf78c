"""Compact context lines (``pack_compact = 1``): every packer still fits B words and every line still
shows its items' dates, while the headers that repeat a turn's own dated lead go, a sentence already
shown under the same date is not shown again, and sentence packing puts items with the same dated
lead on one line with the lead once, so more of the ranked evidence fits the same budget."""
from __future__ import annotations

import pytest

from memarch.modules.retrievers._packing import pack_context, pack_sentences
from memarch.modules.stores.vector import VectorStore
from memarch.pipeline.episodes import Query
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.retrieval import ScoredItem, count_words, dates_itself, format_item, item_header

QUERY = Query("Where did Ann move for her job?")


def _turn(i: int, text: str, when: str, turn: int = 5, speaker: str = "Ann") -> MemoryItem:
    return MemoryItem(f"{speaker} ({when}): {text}", "turn", episode_id=f"s{i}", source_ids=[f"D{i}:{turn}"],
                      event_time=when, fields={"unit": "turn", "speaker": speaker})


def _ranked() -> list[ScoredItem]:
    items = [_turn(0, "Hey! How are you? The weather was grey again.", "2023-05-01"),
             _turn(0, "By the way, I moved to Lisbon last spring for my new job. It is sunny.", "2023-05-01", turn=7),
             MemoryItem("Ann moved to Lisbon for a job.", "fact", event_time="2023-05-08", episode_id="s1"),
             MemoryItem("Ann likes long walks.", "fact", episode_id="s1"),
             _turn(2, "Nothing new here. Just work.", "2023-05-15")]
    return [ScoredItem(it, 1.0 - i / 10) for i, it in enumerate(items)]


def test_compact_headers_drop_only_what_the_text_already_says():
    items = [s.item for s in _ranked()]
    turn, dated_fact, undated = items[0], items[2], items[3]
    assert item_header(turn) == "[turn 2023-05-01]" and item_header(turn, compact=True) == ""
    assert format_item(turn, compact=True) == turn.text  # "Ann (2023-05-01): Hey! ..." dates itself
    assert format_item(dated_fact, compact=True) == "[2023-05-08] Ann moved to Lisbon for a job."
    assert format_item(undated, compact=True) == "Ann likes long walks."
    assert format_item(undated) == "[fact] Ann likes long walks."
    # A lead without a year, or split across sentences ("Dr. Ng ..."), does not date the item: the header stays.
    assert not dates_itself(MemoryItem("Ann (Monday): hi", "turn", event_time="2023-05-01"))
    split = MemoryItem("Dr. Ng (2 May 2023): hello there", "turn", event_time="2023-05-02")
    assert not dates_itself(split) and format_item(split, compact=True).startswith("[2023-05-02] ")


@pytest.mark.parametrize("budget", [10, 16, 25, 40, 200])
@pytest.mark.parametrize("packer", [0, 1, 2])
@pytest.mark.parametrize("order", [0, 1])
def test_every_compact_packer_fits_the_budget_and_every_line_shows_its_items_date(budget, packer, order,
                                                                                 hash_resources):
    ranked = _ranked()
    store = VectorStore(hash_resources)
    store.add([s.item for s in ranked])
    r = pack_context(QUERY, ranked, top_k=5, context_budget=budget,
                     config={"pack": packer, "pack_order": order, "pack_compact": 1},
                     embedder=hash_resources.embedder, trace={}, store=store)
    assert count_words(r.context) <= budget
    lines = r.context.splitlines()
    for i, scored in enumerate(r.items):
        line = lines[scored.trace.get("line", i)]
        if scored.item.event_time:
            assert scored.item.event_time in line, (line, scored.item.text)
    if order:
        firsts = {}
        for s in r.items:
            firsts.setdefault(s.trace["line"], s.item.event_time or "~")
        dates = [firsts[k] for k in sorted(firsts)]
        assert dates == sorted(dates)


def test_compact_sentences_fit_more_evidence_in_the_same_budget(hash_resources):
    ranked = _ranked()
    kw = dict(context_budget=30, embedder=hash_resources.embedder, rank_weight=3.0)
    plain = pack_sentences(QUERY, ranked, **kw)
    compact = pack_sentences(QUERY, ranked, compact=True, **kw)
    assert count_words(compact.context) <= 30 and count_words(plain.context) <= 30
    kept = lambda r: sum(len(s.trace["sentences"]) for s in r.items)  # noqa: E731
    assert kept(compact) > kept(plain)
    # Ann's two turns of 1 May share one line, the lead once, in rank order.
    first = compact.context.splitlines()[0]
    assert first.startswith("Ann (2023-05-01): ") and first.count("Ann (2023-05-01):") == 1
    assert compact.items[0].trace["line"] == compact.items[1].trace["line"] == 0
    assert compact.trace["lines"] == len(compact.context.splitlines())


def test_a_sentence_already_shown_under_the_same_date_is_not_shown_again(hash_resources):
    turn = _turn(3, "I met my teammates on the 15th. They gave me a signed ball.", "2023-08-17", speaker="John")
    same_day = MemoryItem("17 August 2023 (date of mention) - John: They gave me a signed ball.", "event",
                          event_time="2023-08-17", episode_id="s3")
    resolved = MemoryItem("15 August 2023 (on the 15th, said 17 August 2023) - John: I met my teammates on the "
                          "15th.", "event", event_time="2023-08-15", episode_id="s3")
    ranked = [ScoredItem(it, 1.0 - i / 10) for i, it in enumerate([turn, same_day, resolved])]
    r = pack_sentences(Query("What did John's teammates give him?"), ranked, context_budget=200,
                       embedder=hash_resources.embedder, compact=True)
    assert r.context.count("They gave me a signed ball.") == 1 and r.trace["repeats_skipped"] == 1
    # The event that resolves another date says something new (its date): it stays.
    assert "15 August 2023 (on the 15th" in r.context
    plain = pack_sentences(Query("What did John's teammates give him?"), ranked, context_budget=200,
                           embedder=hash_resources.embedder)
    assert plain.context.count("They gave me a signed ball.") == 2 and "repeats_skipped" not in plain.trace


def test_compact_is_off_by_default_and_a_knob_of_every_retriever():
    from memarch.pipeline.registry import REGISTRY

    for name in REGISTRY.names("retriever"):
        knob = next((k for k in REGISTRY.get("retriever", name).knobs if k.name == "pack_compact"), None)
        assert knob is not None and knob.default == 0 and knob.group == "pack", name

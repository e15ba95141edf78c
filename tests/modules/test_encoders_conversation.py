"""The five conversation encoders (turn, summary, fact, entity, event): LM-free algorithms, the
relative-date resolver, the subject|attribute keys that let a newer fact win, and the LM paths with
DummyLM (a malformed answer gets one corrective retry, then the LM-free path)."""
from __future__ import annotations

import datetime as dt
import json
import logging
import time

import dspy
import pytest
from dspy.utils.dummies import DummyLM

from memarch.pipeline.dates import parse_session_date, resolve_time_expression
from memarch.modules.encoders._conversation_text import split_sentences
from memarch.modules.encoders.entity import EntityEncoder
from memarch.modules.encoders.event import EventEncoder
from memarch.modules.encoders.fact import FactEncoder, extract_facts
from memarch.modules.encoders.summary import SummaryEncoder
from memarch.modules.encoders.turn import TurnEncoder
from memarch.pipeline.episodes import Episode, Turn
from memarch.pipeline.registry import REGISTRY
from memarch.pipeline.resources import Resources
from memarch.pipeline.space import ArchitectureSpace

ANCHOR = dt.date(2023, 5, 8)  # a Monday
ENCODERS = (TurnEncoder, SummaryEncoder, FactEncoder, EntityEncoder, EventEncoder)


def session(sid: str = "conv-1:session_1", date: str = "1:56 pm on 8 May, 2023", prefix: str = "D1") -> Episode:
    lines = [
        ("Caroline", "Hey Mel! Good to see you! How have you been?"),
        ("Melanie", "Hey Caroline! I'm swamped with the kids and work. I work as a nurse at the clinic."),
        ("Caroline", "I went to a LGBTQ support group yesterday and it was so powerful."),
        ("Melanie", "Wow, that's cool! Did you hear any inspiring stories?"),
        ("Caroline", "The transgender stories at the support group were so inspiring! I live in Boston now."),
        ("Melanie", "Last week I took the kids camping near Lake Tahoe and we loved the stars."),
        ("Caroline", "I'm going to a pride parade next month with my friend Jordan."),
        ("Melanie", "I love painting. My dog's name is Oscar."),
    ]
    turns = [Turn(f"{prefix}:{i}", spk, text) for i, (spk, text) in enumerate(lines, 1)]
    turns[4].metadata["blip_caption"] = "a photo of a rainbow flag"
    return Episode(sid, turns=turns, time=date)


@pytest.fixture
def res(hash_resources) -> Resources:
    return hash_resources


def lm_resources(tmp_path, answers: list[dict]) -> Resources:
    from memarch.pipeline.embed import Embedder

    lm = DummyLM(answers, adapter=dspy.JSONAdapter())
    return Resources(embedder=Embedder("hash", cache_dir=tmp_path), cache_dir=tmp_path, lm=lm,
                     use_encoder_cache=False)


# -- dates ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, tense, iso, granularity", [
    ("I went to a support group yesterday", None, "2023-05-07", "day"),
    ("the day before yesterday we met", "past", "2023-05-06", "day"),
    ("We leave tomorrow", "future", "2023-05-09", "day"),
    ("I ran a race two days ago", "past", "2023-05-06", "day"),
    ("It happened 3 weeks ago", "past", "2023-04-17", "week"),
    ("I painted it a couple of days ago", "past", "2023-05-06", "day"),
    ("Last week I took the kids camping", "past", "2023-05-01", "week"),
    ("Next week is the parade", "future", "2023-05-15", "week"),
    ("last Saturday I ran", "past", "2023-05-06", "day"),
    ("on Friday we went out", "past", "2023-05-05", "day"),
    ("on Friday we will go out", "future", "2023-05-12", "day"),
    ("next Monday is the interview", "future", "2023-05-15", "day"),
    ("last weekend I hiked", "past", "2023-05-06", "weekend"),
    ("this weekend we are going camping", "future", "2023-05-13", "weekend"),
    ("next month I will move", "future", "2023-06-01", "month"),
    ("last month I visited my mom", "past", "2023-04-01", "month"),
    ("last year I visited Italy", "past", "2022-01-01", "year"),
    ("in a few weeks", "future", "2023-05-29", "week"),
    ("I took this pic last summer", "past", "2022-06-01", "season"),
    ("on May 7 I saw it", "past", "2023-05-07", "day"),
    ("I moved on 7 May 2022", "past", "2022-05-07", "day"),
    ("It was on June 3rd, 2021", "past", "2021-06-03", "day"),
    ("I painted it last May", "past", "2022-05-01", "month"),
    ("back in 2019 we met", "past", "2019-01-01", "year"),
    ("in December I went skiing", "past", "2022-12-01", "month"),
    ("We ran a 5k this morning", "past", "2023-05-08", "day"),
    ("I met my teammates on the 5th", "past", "2023-05-05", "day"),
    ("I met my teammates on the 15th", "past", "2023-04-15", "day"),
    ("The show is on the 20th", "future", "2023-05-20", "day"),
])
def test_resolve_time_expression_table(text, tense, iso, granularity):
    found = resolve_time_expression(text, ANCHOR, tense)
    assert found is not None, text
    assert (found.iso, found.granularity) == (iso, granularity)


@pytest.mark.parametrize("text", ["May I ask you something?", "I have 2000 photos", "It was fine", ""])
def test_no_time_expression(text):
    assert resolve_time_expression(text, ANCHOR, "past") is None


def test_nothing_resolves_without_an_anchor():
    assert resolve_time_expression("I went yesterday", None) is None


@pytest.mark.parametrize("raw, iso", [
    ("1:56 pm on 8 May, 2023", "2023-05-08"),
    ("10:37 am on 27 June, 2023", "2023-06-27"),
    ("2023-05-08T13:56:00", "2023-05-08"),
    ("May 8, 2023", "2023-05-08"),
    ("8 May 2023", "2023-05-08"),
])
def test_parse_session_date(raw, iso):
    assert parse_session_date(raw).isoformat() == iso


def test_parse_session_date_unparseable():
    assert parse_session_date("sometime") is None and parse_session_date(None) is None


# -- registry ------------------------------------------------------------------------------------
def test_registered_as_the_conversation_family_with_ranks():
    specs = {s.name: s for s in REGISTRY.specs("encoder", "conversation")}
    assert [n for n in REGISTRY.names("encoder", "conversation")] == ["turn", "summary", "fact", "entity", "event"]
    assert all(s.uses_lm and not s.needs_lm and s.families == ("conversation",) for s in specs.values())
    assert len(ArchitectureSpace("conversation", lm_available=False).encoder_subsets()) == 31


# -- turn ----------------------------------------------------------------------------------------
def test_turn_items_keep_speaker_absolute_date_caption_and_turn_id(res):
    ep = session()
    items = TurnEncoder(res).encode(ep)
    assert len(items) == len(ep.turns)
    assert items[2].text == "Caroline (8 May 2023): I went to a LGBTQ support group yesterday and it was so powerful."
    assert "[shares a photo of a rainbow flag]" in items[4].text
    assert [it.source_ids for it in items] == [[t.id] for t in ep.turns]
    assert {it.event_time for it in items} == {"2023-05-08"}
    assert all(it.kind == "turn" and it.episode_id == ep.id for it in items)
    assert len({it.id for it in items}) == len(items)


def test_turn_window_adds_overlapping_chunks_covering_every_turn(res):
    ep = session()
    items = TurnEncoder(res, window=4).encode(ep)
    chunks = [it for it in items if it.fields["unit"] == "chunk"]
    assert [c.source_ids for c in chunks] == [["D1:1", "D1:2", "D1:3", "D1:4"], ["D1:3", "D1:4", "D1:5", "D1:6"],
                                              ["D1:5", "D1:6", "D1:7", "D1:8"]]
    assert chunks[0].text.count("\n") == 3
    with pytest.raises(ValueError):
        TurnEncoder(res, window=0)


def test_encoder_output_is_cached_and_config_is_part_of_the_key(res):
    ep = session()
    first = TurnEncoder(res).encode(ep)
    hits = res.encoder_cache.hits
    again = TurnEncoder(res).encode(ep)
    assert res.encoder_cache.hits == hits + 1 and [i.id for i in again] == [i.id for i in first]
    assert len(TurnEncoder(res, window=4).encode(ep)) > len(first)  # a different config is a miss


# -- summary -------------------------------------------------------------------------------------
def test_extractive_summary_within_budget_cites_its_sentences(res):
    ep = session()
    [item] = SummaryEncoder(res, max_words=30).encode(ep)
    body = item.fields["summary"]
    assert len(body.split()) <= 30 + 2 * len(item.source_ids)  # speaker labels are not counted
    assert item.text.startswith("Session on 8 May 2023 (Caroline and Melanie): ")
    assert "?" not in body  # questions never summarise
    turn_text = {t.id: t.text for t in ep.turns}
    for tid in item.source_ids:  # every cited turn contributed a sentence
        assert any(s in body for s in split_sentences(turn_text[tid]))
    # the support group is what the session is about: the central sentence is picked
    assert "support group" in body


# -- fact ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("sentence, attribute, value", [
    ("I work as a nurse at the clinic.", "occupation", "a nurse at the clinic"),
    ("I work at Google.", "employer", "Google"),
    ("I just moved to Boston with my family!", "residence", "Boston"),
    ("i live in Paris now", "residence", "Paris"),
    ("My dog's name is Oscar.", "dog", "Oscar"),
    ("My favorite book is Charlotte's Web.", "favorite_book", "Charlotte's Web"),
    ("I have two kids and a dog.", "kid_count", "two kids"),
    ("I have a kid.", "kid_count", "a kid"),
    ("I really love painting with my kids.", "feeling_about_painting", "painting"),
    ("I hate painting.", "feeling_about_painting", "painting"),
    ("I started pottery classes last month.", "activity_pottery_classes", "pottery classes"),
    ("I got married last year!", "relationship_status", "married"),
    ("I'm planning to adopt a child", "plan_adopt_child", "adopt a child"),
    ("I'm going to the beach next week.", "plan_go_beach", "go to the beach"),
])
def test_fact_patterns(sentence, attribute, value):
    facts = extract_facts("Caroline", sentence)
    assert (facts[0]["attribute"], facts[0]["value"]) == (attribute, value)


@pytest.mark.parametrize("sentence", ["I love it!", "I'm a bit tired.", "How are you?", "My heart is full."])
def test_no_fact_in_small_talk(sentence):
    assert extract_facts("Caroline", sentence) == []


def test_conflicting_facts_share_a_key_and_the_newer_wins(res):
    older = Episode("c:s1", turns=[Turn("D1:1", "Caroline", "I live in Boston. I love painting.")],
                    time="1:56 pm on 8 May, 2023")
    newer = Episode("c:s2", turns=[Turn("D2:1", "Caroline", "I just moved to Seattle! I hate painting now.")],
                    time="10:00 am on 2 June, 2023")
    enc = FactEncoder(res)
    a, b = {i.key: i for i in enc.encode(older)}, {i.key: i for i in enc.encode(newer)}
    assert set(a) == set(b) == {"caroline|residence", "caroline|feeling_about_painting"}
    assert b["caroline|residence"].fields["value"] == "Seattle" and b["caroline|residence"].source_ids == ["D2:1"]
    # What a key-upserting manager does: per key, the item with the latest event_time stands.
    standing = {}
    for item in sorted([*a.values(), *b.values()], key=lambda i: i.event_time):
        standing[item.key] = item
    assert standing["caroline|residence"].text == "Caroline lives in Seattle (stated 2 June 2023)"
    assert standing["caroline|feeling_about_painting"].text.startswith("Caroline hates painting")


def test_newer_fact_supersedes_in_a_program(res):
    """End to end through the memory program (store + manager own the superseding)."""
    from memarch.pipeline.program import MemoryProgram

    program = MemoryProgram({"encode": ["fact"], "store": "json", "retrieve": "hybrid", "manage": "lightweight"},
                            resources=res)
    program.write(Episode("c:s1", turns=[Turn("D1:1", "Caroline", "I live in Boston.")], time="2023-05-08"))
    program.write(Episode("c:s2", turns=[Turn("D2:1", "Caroline", "I moved to Seattle.")], time="2023-06-02"))
    active = [i for i in program.store.list("default") if i.active and i.key == "caroline|residence"]
    assert [i.fields["value"] for i in active] == ["Seattle"]


# -- entity --------------------------------------------------------------------------------------
def test_entity_notes_group_sentences_by_name_and_speaker(res):
    ep = session()
    items = {i.fields["entity_key"]: i for i in EntityEncoder(res).encode(ep)}
    assert {"entity|caroline", "entity|melanie", "entity|lake tahoe", "entity|jordan", "entity|oscar"} <= set(items)
    assert "entity|mel" not in items and "entity|wow" not in items  # alias and interjection
    tahoe = items["entity|lake tahoe"]
    assert tahoe.source_ids == ["D1:6"] and "camping" in tahoe.text
    assert tahoe.text.startswith("About Lake Tahoe, 8 May 2023: ")
    assert set(items["entity|caroline"].source_ids) >= {"D1:3", "D1:5", "D1:7"}
    assert items["entity|caroline"].fields["entity_kind"] == "speaker"


# -- event ---------------------------------------------------------------------------------------
def test_events_are_dated_with_relative_dates_resolved(res):
    ep = session()
    events = {i.source_ids[0]: i for i in EventEncoder(res).encode(ep)}
    assert events["D1:3"].event_time == "2023-05-07"
    assert events["D1:3"].text.startswith("7 May 2023 (yesterday, said 8 May 2023) - Caroline: I went")
    assert events["D1:6"].event_time == "2023-05-01" and events["D1:6"].fields["granularity"] == "week"
    assert events["D1:7"].event_time == "2023-06-01" and events["D1:7"].fields["tense"] == "future"
    assert "D1:4" not in events and "D1:1" not in events  # a question and a greeting


# -- LM paths (DummyLM + JSONAdapter) ------------------------------------------------------------
GOOD_ANSWERS = {
    TurnEncoder: {"rewrites": [{"turn_id": "D1:3", "standalone": "Caroline went to an LGBTQ support group on 7 May 2023."}]},
    SummaryEncoder: {"summary": "Caroline told Melanie about an LGBTQ support group she attended on 7 May 2023.",
                     "key_turn_ids": ["D1:3", "D1:5"]},
    FactEncoder: {"facts": [{"subject": "Melanie", "attribute": "Occupation", "value": "nurse", "turn_ids": ["D1:2"]}]},
    EntityEncoder: {"profiles": [{"name": "Oscar", "kind": "pet", "notes": ["Melanie's dog"], "turn_ids": ["D1:8"]}]},
    EventEncoder: {"events": [{"description": "Caroline went to an LGBTQ support group", "date": "2023-05-07",
                               "granularity": "day", "time_expression": "yesterday", "turn_ids": ["D1:3"]}]},
}
MALFORMED = {
    TurnEncoder: {"rewrites": "not a list"},
    SummaryEncoder: {"summary": "", "key_turn_ids": ["D1:3"]},
    FactEncoder: {"facts": [{"subject": "Melanie"}]},
    EntityEncoder: {"profiles": [{"name": "Oscar", "kind": "spaceship", "notes": [], "turn_ids": []}]},
    EventEncoder: {"events": [{"description": "x", "date": "last week", "granularity": "day",
                               "time_expression": "", "turn_ids": ["D1:3"]}]},
}


@pytest.mark.parametrize("cls", ENCODERS, ids=lambda c: c.__name__)
def test_lm_path_uses_the_typed_answer(cls, tmp_path):
    enc = cls(lm_resources(tmp_path, [GOOD_ANSWERS[cls]]))
    items = enc.encode(session())
    assert enc.fallbacks == 0 and items
    lm_items = [i for i in items if i.fields.get("method") == "lm" or "standalone" in i.fields]
    assert lm_items and all(i.source_ids for i in lm_items)


def test_lm_answers_are_normalised(tmp_path):
    [fact] = FactEncoder(lm_resources(tmp_path, [GOOD_ANSWERS[FactEncoder]])).encode(session())
    assert fact.key == "melanie|occupation" and fact.source_ids == ["D1:2"]
    [event] = EventEncoder(lm_resources(tmp_path, [GOOD_ANSWERS[EventEncoder]])).encode(session())
    assert event.event_time == "2023-05-07" and event.fields["time_expression"] == "yesterday"


@pytest.mark.parametrize("cls", ENCODERS, ids=lambda c: c.__name__)
def test_malformed_answer_gets_one_corrective_retry(cls, tmp_path, caplog):
    enc = cls(lm_resources(tmp_path, [MALFORMED[cls], GOOD_ANSWERS[cls]]))
    with caplog.at_level(logging.INFO):
        items = enc.encode(session())
    assert enc.fallbacks == 0 and items
    assert any("retrying once" in r.getMessage() for r in caplog.records)
    lm = enc.resources.lm
    assert len(lm.history) == 2 and "previous answer was rejected" in json.dumps(lm.history[-1]["messages"])


@pytest.mark.parametrize("cls", ENCODERS, ids=lambda c: c.__name__)
def test_malformed_twice_falls_back_to_the_lm_free_path(cls, tmp_path, res, caplog):
    enc = cls(lm_resources(tmp_path, [MALFORMED[cls], MALFORMED[cls]]))
    with caplog.at_level(logging.WARNING):
        items = enc.encode(session())
    assert enc.fallbacks == 1
    assert any("LM-free path" in r.getMessage() for r in caplog.records)
    free = cls(res).encode(session())
    assert [i.text for i in items] == [i.text for i in free]


def test_made_up_turn_ids_are_rejected(tmp_path):
    bad = {"facts": [{"subject": "Melanie", "attribute": "job", "value": "nurse", "turn_ids": ["D9:99"]}]}
    enc = FactEncoder(lm_resources(tmp_path, [bad, bad]))
    items = enc.encode(session())
    assert enc.fallbacks == 1 and all(i.fields["method"] == "pattern" for i in items)


# -- on the real data ----------------------------------------------------------------------------
@pytest.mark.integration
def test_all_locomo_turns_through_every_encoder(data_dir, res):
    raw = json.loads((data_dir / "locomo" / "locomo10.json").read_text())
    episodes = []
    for conv in raw:
        c = conv["conversation"]
        for key, turns in c.items():
            if key.startswith("session_") and isinstance(turns, list):
                episodes.append(Episode(f"{conv['sample_id']}:{key}", time=c[f"{key}_date_time"], turns=[
                    Turn(t["dia_id"], t["speaker"], t["text"], metadata={"blip_caption": t["blip_caption"]}
                         if "blip_caption" in t else {}) for t in turns]))
    assert sum(len(e.turns) for e in episodes) == 5882
    res.use_encoder_cache = False
    start = time.perf_counter()
    counts = {}
    for cls in ENCODERS:
        enc = cls(res)
        counts[cls.__name__] = 0
        for ep in episodes:
            valid = {t.id for t in ep.turns}
            for item in enc.encode(ep):
                assert item.source_ids and set(item.source_ids) <= valid
                assert item.event_time and dt.date.fromisoformat(item.event_time)
                counts[cls.__name__] += 1
    assert counts["TurnEncoder"] == 5882 and counts["SummaryEncoder"] == len(episodes)
    assert min(counts.values()) > 200
    assert time.perf_counter() - start < 60  # seconds on a loaded 2-core machine; ~4 s unloaded


@pytest.mark.parametrize("cls", ENCODERS, ids=lambda c: c.__name__)
def test_an_episode_without_turns_yields_nothing_and_calls_no_lm(cls, tmp_path):
    enc = cls(lm_resources(tmp_path, []))
    assert enc.encode(Episode("t1", task="open the door", outcome="success")) == []
    assert enc.resources.lm.history == []

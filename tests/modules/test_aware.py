"""Query-aware retrieval (the retrievers' ``time_weight`` / ``recency_weight`` / ``entity_weight``
knobs): a temporal question reads the item of its period over a lexically closer one of another
date; a when-question reads the item whose event date was resolved; entity lookup finds an
entity's items whose text does not name it the way the question does; every weight off is
today's ranking."""
from __future__ import annotations

import datetime as dt

import pytest

from memarch.modules.retrievers._aware import (AWARENESS, is_when_question, named_entities, period_of,
                                               question_period, namespace_facts)
from memarch.modules.retrievers.hybrid import HybridRetriever
from memarch.modules.retrievers.mmr import MMRRetriever
from memarch.modules.stores.vector import VectorStore
from memarch.pipeline.dates import ResolvedDate
from memarch.pipeline.episodes import Query
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.registry import REGISTRY


def _store(resources, items):
    store = VectorStore(resources)
    store.add(items)
    return store


def _dated(text, day, episode, **fields):
    return MemoryItem(text, "turn", episode_id=episode, event_time=day, fields=fields)


def test_a_temporal_question_reads_the_item_of_its_period_over_a_lexically_closer_one(hash_resources):
    close = _dated("Ann (2023-08-14): I baked a lemon cake for the party at the lake house.", "2023-08-14", "s1",
                   speaker="Ann")
    right = _dated("Ann (2023-05-20): We had a cake.", "2023-05-20", "s2", speaker="Ann")
    filler = [_dated(f"Ann (2023-09-0{i}): note {i} about the garden fence", f"2023-09-0{i}", f"s{i + 3}",
                     speaker="Ann") for i in range(1, 8)]
    store = _store(hash_resources, [close, right, *filler])
    query = Query("What cake did Ann bake for the party at the lake house in May 2023?", episode_id="q")
    plain = HybridRetriever(hash_resources).retrieve(query, store, top_k=1)
    assert plain.items[0].item.id == close.id  # lexically closer, wrong month
    aware = HybridRetriever(hash_resources, time_weight=2.0).retrieve(query, store, top_k=1)
    assert aware.items[0].item.id == right.id
    assert aware.trace["time_period"] == ["May 2023", "2023-05-01", "2023-06-01"]
    assert aware.items[0].trace["time_rank"] == 1


def test_a_relative_period_is_anchored_at_the_newest_memory_or_the_question_time(hash_resources):
    store = _store(hash_resources, [_dated("x", "2023-09-03", "s1"), _dated("y", "2022-05-02", "s2")])
    facts = namespace_facts(store, "default")
    assert facts.newest == dt.date(2023, 9, 3)
    found, (start, end) = question_period(Query("What did Ann do last May?"), facts)
    assert (start, end) == (dt.date(2023, 5, 1), dt.date(2023, 6, 1))
    _, (start, _) = question_period(Query("What did Ann do last May?", time="2023-04-10"), facts)
    assert start == dt.date(2022, 5, 1)
    assert question_period(Query("What does Ann like?"), facts) is None
    assert period_of(ResolvedDate(dt.date(2023, 1, 1), "year", "in 2023")) == (dt.date(2023, 1, 1),
                                                                                dt.date(2024, 1, 1))


@pytest.mark.parametrize("text,when", [("When did Caroline go to the support group?", True),
                                       ("What year did Ann move?", True),
                                       ("Since when has Bob played chess?", True),
                                       ("What did Ann paint?", False), ("Where does Bob live?", False)])
def test_when_questions(text, when):
    assert is_when_question(text) is when


def test_a_when_question_reads_the_item_with_a_resolved_event_date(hash_resources):
    turn = _dated("Caroline (2023-05-08): I went to the support group yesterday, the support group was great.",
                  "2023-05-08", "s1", speaker="Caroline")
    event = MemoryItem("7 May 2023 (yesterday, said 8 May 2023) - Caroline: I went.", "event", episode_id="s1",
                       event_time="2023-05-07", fields={"granularity": "day", "speaker": "Caroline"})
    filler = [_dated(f"Caroline (2023-06-0{i}): the support group meets on {i}", f"2023-06-0{i}", f"s{i + 2}")
              for i in range(1, 6)]
    store = _store(hash_resources, [turn, event, *filler])
    query = Query("When did Caroline go to the support group?", episode_id="q")
    assert HybridRetriever(hash_resources).retrieve(query, store, top_k=1).items[0].item.id != event.id
    aware = HybridRetriever(hash_resources, time_weight=2.0).retrieve(query, store, top_k=1)
    assert aware.items[0].item.id == event.id and aware.trace["when_question"] is True


def test_entity_lookup_finds_items_that_name_the_entity_otherwise(hash_resources):
    # The question says "Mel"; her items say "I" (her own turn) or "Melanie" (a fact); the
    # lexically closest item is Jon's.
    hers = [_dated("Melanie (2023-05-02): I really love pottery, I made a bowl.", "2023-05-02", "s1",
                   speaker="Melanie"),
            MemoryItem("Melanie loves painting sunsets", "fact", episode_id="s2", fields={"subject": "Melanie"})]
    his = [_dated(f"Jon (2023-05-0{i}): what does a hobby mean, Mel asked me about hobby {i}", f"2023-05-0{i}",
                  f"s{i + 3}", speaker="Jon") for i in range(1, 8)]
    store = _store(hash_resources, [*hers, *his])
    query = Query("What hobby does Mel have?", episode_id="q")
    plain = HybridRetriever(hash_resources).retrieve(query, store, top_k=2)
    assert not {s.item.id for s in plain.items} & {it.id for it in hers}
    aware = HybridRetriever(hash_resources, entity_weight=2.0, aware_pool=5).retrieve(query, store, top_k=2)
    assert {s.item.id for s in aware.items} == {it.id for it in hers}
    assert aware.trace["entities"] == ["melanie"]
    assert named_entities("Did Caroline and Mel meet?", {"caroline": 1, "melanie": 2, "jon": 3}) == \
        ["caroline", "melanie"]
    assert named_entities("What is the melody?", {"melanie": 1}) == []  # lower-case words are not names


def test_recency_prior_prefers_the_newest_of_the_pool(hash_resources):
    old = _dated("Ann (2022-01-01): my phone is a blue phone from the blue shop", "2022-01-01", "s1")
    new = _dated("Ann (2023-06-01): I got a new phone", "2023-06-01", "s2")
    store = _store(hash_resources, [old, new])
    query = Query("What blue phone does Ann have?", episode_id="q")
    assert HybridRetriever(hash_resources).retrieve(query, store, top_k=2).items[0].item.id == old.id
    aware = HybridRetriever(hash_resources, recency_weight=2.0).retrieve(query, store, top_k=2)
    assert aware.items[0].item.id == new.id


@pytest.mark.parametrize("retriever", [HybridRetriever, MMRRetriever])
def test_every_weight_off_is_todays_ranking(retriever, hash_resources):
    items = [_dated(f"Ann ({d}): item {i} about cakes and lakes in May", d, f"s{i}", speaker="Ann")
             for i, d in enumerate(["2023-05-01", "2023-05-09", "2022-03-01", "2023-07-04"])]
    store = _store(hash_resources, items)
    query = Query("When did Ann bake a cake in May 2023?", episode_id="q")
    a = retriever(hash_resources).retrieve(query, store, top_k=3)
    b = retriever(hash_resources, time_weight=0.0, entity_weight=0.0, recency_weight=0.0).retrieve(
        query, store, top_k=3)
    assert a.context == b.context and a.ids() == b.ids()
    assert "time_period" not in a.trace


def test_the_aware_knobs_are_every_retrievers_and_off_by_default():
    names = {k.name for k in AWARENESS}
    for spec in REGISTRY.specs("retriever"):
        if spec.name in ("files",):
            continue
        assert names <= {k.name for k in spec.knobs}, spec.name
    assert all(k.default == 0 for k in AWARENESS if k.name.endswith("_weight"))

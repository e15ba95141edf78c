"""Benchmarks: scoring on hand-checked pairs, the generator (deterministic, right gold evidence),
splits (deterministic, disjoint), the stream schedule and the name registry. Fast, no data files."""
from __future__ import annotations

import datetime as dt

import pytest

from memarch.benchmarks import BENCHMARKS, available, get_benchmark
from memarch.benchmarks.base import SPLITS, Benchmark, Dialogue, Question
from memarch.benchmarks.generated import GeneratedConversations, days_back
from memarch.benchmarks.locomo import parse_datetime, parse_evidence
from memarch.benchmarks.metrics.scores import (answer_recall, evidence_recall, is_abstention, normalize_answer,
                                        qa_f1, word_f1)
from memarch.benchmarks.metrics.porter import stem
from memarch.benchmarks.evaluation.protocols import stream_schedule
from memarch.errors import MemarchError
from memarch.pipeline.episodes import Episode, Turn


# -- scoring ------------------------------------------------------------------------------------
@pytest.mark.parametrize("word,expected", [
    ("running", "run"), ("caresses", "caress"), ("ponies", "poni"), ("relational", "relat"),
    ("hopping", "hop"), ("filing", "file"), ("happy", "happi"), ("generalizations", "gener"),
    ("adoption", "adopt"), ("paintings", "paint"), ("is", "is")])
def test_porter_stemmer_matches_the_published_examples(word, expected):
    assert stem(word) == expected


def test_normalisation_follows_locomo():
    assert normalize_answer("The Cat, and a Dog!") == "cat dog"


def test_token_f1_hand_checked():
    # pred {cat, sat}, gold {cat, sit}: stems cat/sat vs cat/sit -> 1 common of 2 and 2 -> 0.5
    assert word_f1("the cat sat", "a cat sits") == pytest.approx(0.5)
    assert word_f1("painting", "paintings") == 1.0  # stemming
    assert word_f1("", "x") == 0.0


def test_qa_f1_category_rules():
    # multi-hop: mean over comma-split gold parts of the best F1 over predicted parts
    assert qa_f1("goldfish, tabby", "tabby, goldfish", "multi-hop") == 1.0
    # one predicted part "goldfish tabbi cat" vs each gold part: P=1/3, R=1 -> 0.5 each
    assert qa_f1("goldfish and a tabby cat", "tabby, goldfish", "multi-hop") == pytest.approx(0.5)
    assert qa_f1("psychology", "Psychology; counseling certification", "open-domain") == 1.0
    assert qa_f1("No information available.", None, "adversarial") == 1.0
    assert qa_f1("Yes", None, "adversarial") == 0.0
    assert is_abstention("That is not mentioned in the conversation")


def test_answer_recall_within_budget():
    ctx = "one two three four Boston Massachusetts"
    assert answer_recall("Boston", ctx, context_budget=10) == 1.0
    assert answer_recall("Boston", ctx, context_budget=4) == 0.0  # cut before the answer
    assert answer_recall("7 May 2023", "she went on 8 May, 2023", 200) == pytest.approx(2 / 3)
    assert answer_recall("", ctx) == 0.0


def test_evidence_recall():
    assert evidence_recall(["D1:1", "D2:3"], ["D2:3", "D9:9"]) == 0.5
    assert evidence_recall([], ["D1:1"]) is None


# -- LoCoMo parsing -----------------------------------------------------------------------------
def test_lenient_evidence_ids():
    assert parse_evidence(["D8:6; D9:17"]) == ["D8:6", "D9:17"]
    assert parse_evidence(["D:11:26"]) == ["D11:26"]
    assert parse_evidence(["D"]) == []
    assert parse_evidence(["D9:1 D4:4", "D4:4"]) == ["D9:1", "D4:4"]


def test_locomo_dates_to_iso():
    assert parse_datetime("1:56 pm on 8 May, 2023") == "2023-05-08T13:56"
    assert parse_datetime("10:37 am on 27 June, 2023") == "2023-06-27T10:37"
    assert parse_datetime("sometime") is None


# -- the generated benchmark --------------------------------------------------------------------
def _texts(bench: Benchmark) -> list[str]:
    return [t.text for d in bench.dialogues for s in d.sessions for t in s.turns]


def test_generator_is_deterministic_per_seed():
    a, b = GeneratedConversations(seed=3), GeneratedConversations(seed=3)
    assert _texts(a) == _texts(b)
    assert [(q.text, q.answer, q.evidence) for q in a.questions()] == \
           [(q.text, q.answer, q.evidence) for q in b.questions()]
    assert _texts(GeneratedConversations(seed=4)) != _texts(a)


def test_generator_categories_and_knobs():
    small = GeneratedConversations(seed=0, conversations=2, sessions=4, distractors=0)
    noisy = GeneratedConversations(seed=0, conversations=2, sessions=4, distractors=8)
    assert set(small.stats()["categories"]) == set(GeneratedConversations.categories)
    assert noisy.stats()["turns"] == small.stats()["turns"] + 2 * 4 * 8
    assert len(small.dialogues) == 2 and all(len(d.sessions) == 4 for d in small.dialogues)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generator_gold_evidence_is_right(seed):
    bench = GeneratedConversations(seed=seed, conversations=3)
    for d in bench.dialogues:
        turns = {t.id: (t, s) for s in d.sessions for t in s.turns}
        all_text = " ".join(t.text for t, _ in turns.values()).lower()
        for q in d.questions:
            assert all(e in turns for e in q.evidence), q
            if q.category == "adversarial":
                assert q.answer is None and not q.evidence
                topic = q.metadata["never_said"]
                assert topic in q.text and topic not in all_text  # never said in this dialogue
                continue
            ev = [turns[e][0] for e in q.evidence]
            speaker = q.text.split("'s ")[0].split()[-1] if "'s " in q.text else None
            if q.category == "temporal":
                turn, session = turns[q.evidence[0]]
                phrase = q.metadata["relative"]
                assert phrase in turn.text
                day = dt.date.fromisoformat(turn.date)
                gold = day - dt.timedelta(days=days_back(phrase, day))
                assert q.answer == f"{gold.day} {gold.strftime('%B')} {gold.year}"
                assert gold < day and (day - gold).days <= 7
            elif q.category == "multi-hop" and "," in q.answer:
                for part, turn in zip(q.answer.split(", "), ev):
                    assert part in turn.text
            elif "before" in q.text:  # the older value, and the change that replaced it
                assert q.answer in ev[0].text and q.text.split()[-1].rstrip("?") in ev[1].text
            else:
                assert q.answer in ev[-1].text, (q, ev[-1].text)
            if speaker and q.category != "multi-hop":
                assert all(t.speaker == speaker for t in ev)


def test_knowledge_update_now_points_at_the_latest_statement():
    bench = GeneratedConversations(seed=5)
    for d in bench.dialogues:
        order = {t.id: i for i, t in enumerate(t for s in d.sessions for t in s.turns)}
        for q in d.questions:
            if q.category == "knowledge-update" and "before" not in q.text:
                person = q.text.split("'s ")[0].split()[-1] if "'s " in q.text else q.text.split()[-3]
                kind = "hired me" if "occupation" in q.text else "moved to"
                later = [t for s in d.sessions for t in s.turns
                         if t.speaker == person and kind in t.text and order[t.id] > order[q.evidence[0]]]
                assert not later


# -- splits and schedule ------------------------------------------------------------------------
@pytest.mark.parametrize("split_by", ["question", "dialogue"])
def test_splits_are_deterministic_and_disjoint(split_by):
    bench = GeneratedConversations(seed=0, conversations=8, split_by=split_by)
    parts = {name: {q.id for q in bench.split(name).questions()} for name in SPLITS}
    assert not parts["search"] & parts["validation"]
    assert not parts["search"] & parts["test"]
    assert not parts["validation"] & parts["test"]
    assert set().union(*parts.values()) == {q.id for q in bench.questions()}
    again = GeneratedConversations(seed=0, conversations=8, split_by=split_by)
    assert {q.id for q in again.split("search").questions()} == parts["search"]
    others = [{q.id for q in GeneratedConversations(seed=0, conversations=8, split_seed=s, split_by=split_by)
               .split("search").questions()} for s in (1, 2, 3)]
    assert any(o != parts["search"] for o in others)
    sessions = bench.split("test").stats()["sessions"]
    if split_by == "question":  # every split still sees the whole stream of sessions
        assert sessions == bench.stats()["sessions"]
    else:  # test conversations only
        assert sessions < bench.stats()["sessions"]


def test_dialogue_split_keeps_conversations_whole():
    bench = GeneratedConversations(seed=0, conversations=8, split_by="dialogue")
    spaces = {name: {d.namespace for d in bench.split(name).dialogues} for name in SPLITS}
    assert not spaces["search"] & spaces["test"] and not spaces["validation"] & spaces["test"]
    with pytest.raises(MemarchError):
        bench.split("train")


def test_limit_takes_the_first_questions():
    bench = GeneratedConversations(seed=0)
    assert len(bench.limit(7).questions()) == 7
    assert bench.limit(7).questions() == bench.questions()[:7]


def _dialogue() -> Dialogue:
    s1 = Episode(id="s1", namespace="n", turns=[Turn("D1:1", "A", "I live in Oslo.")])
    s2 = Episode(id="s2", namespace="n", turns=[Turn("D2:1", "A", "I moved to Rome.")])
    qs = [Question("q1", "Where did A live first?", "Oslo", ["D1:1"]),
          Question("q2", "Where does A live?", "Rome", ["D2:1", "D1:1"]),
          Question("q3", "No evidence?", "x", []),
          Question("q4", "Asked early", "Oslo", ["D2:1"], ask_after=0)]
    return Dialogue("n", [s1, s2], qs)


def test_stream_schedule_asks_after_the_evidence():
    sched = stream_schedule(_dialogue())
    assert [s.id for s, _ in sched] == ["s1", "s2"]
    assert [q.id for q in sched[0][1]] == ["q1", "q4"]
    assert [q.id for q in sched[1][1]] == ["q2", "q3"]
    early = _dialogue()
    early.questions = [q for q in early.questions if q.id in ("q1", "q4")]
    assert [s.id for s, _ in stream_schedule(early)] == ["s1"]  # nothing left to ask after s1


# -- registry -----------------------------------------------------------------------------------
def test_benchmark_names():
    assert {"generated", "locomo", "babi"} <= set(BENCHMARKS)
    assert BENCHMARKS[0] == "generated"
    assert isinstance(get_benchmark("generated", conversations=1), GeneratedConversations)
    with pytest.raises(MemarchError, match="unknown benchmark"):
        get_benchmark("nope")
    with pytest.raises(MemarchError):
        get_benchmark("generated", colour="red")


def test_textworld_is_offered_only_when_its_file_exists(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec

    def fake(name, *a):
        return object() if name == "memarch.benchmarks.textworld" else real(name, *a)

    monkeypatch.setattr(importlib.util, "find_spec", fake)
    assert "textworld" in available()


def test_distractors_never_contain_a_persona_answer():
    bench = GeneratedConversations(seed=0, distractors=12)
    clean = GeneratedConversations(seed=0, distractors=0)
    for noisy_d, clean_d in zip(bench.dialogues, clean.dialogues):
        planned = {t.text for s in clean_d.sessions for t in s.turns}
        chatter = [t.text.lower() for s in noisy_d.sessions for t in s.turns if t.text not in planned]
        assert chatter
        for q in noisy_d.questions:
            if q.answer and q.category != "temporal":
                for part in q.answer.lower().split(", "):
                    assert not any(part in c for c in chatter), (part, q.text)

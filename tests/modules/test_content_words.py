"""The content-word rule (`memarch.modules.managers._content`): which words make a fact that fact,
and when one near-duplicate may absorb another."""
from __future__ import annotations

import pytest

from memarch.modules.managers import _content
from memarch.modules.managers._content import content_words, may_absorb, missing_content, same_content


@pytest.mark.parametrize("text, expected", [
    ("bob fact number 47: the code word is w47xbob", {"47", "w47xbob"}),
    ("the flight is A320, gate B12", {"a320", "b12"}),
    ("it cost 1,000 dollars at 7:30 on 2023-05-01", {"1000", "7:30", "2023-05-01"}),
    ("we met on Monday, 7 May", {"monday", "7", "may"}),
    ("she has two dogs and one cat", {"two"}),
    ("i saw her yesterday", {"yesterday"}),
    ("Caroline moved to Paris", {"caroline", "paris"}),
    ("Caroline's sister lives in Lisbon", {"caroline", "lisbon"}),
    ("I'm sure we met Will there. The end.", {"will"}),
    ("May I come? It's fine, We can go.", {"we"}),
    ("open the fridge before taking the apple", set()),
])
def test_content_words(text, expected):
    assert content_words(text) == expected


@pytest.mark.parametrize("a, b", [
    ("bob fact number 46: the code word is w46xbob", "bob fact number 47: the code word is w47xbob"),  # codes
    ("the meeting is at 10:30", "the meeting is at 11:30"),                                            # times
    ("Caroline moved to Paris", "Melanie moved to Paris"),                                             # names
    ("we moved on 2023-05-01", "we moved on 2023-06-01"),                                              # dates
    ("the concert was in June", "the concert was in July"),                                           # months
    ("I adopted two cats", "I adopted three cats"),                                                    # numbers
])
def test_different_content_never_merges(a, b):
    assert not may_absorb(a, b) and not may_absorb(b, a) and not same_content(a, b)


@pytest.mark.parametrize("a, b", [
    ("Caroline moved to Paris in May 2023.", "caroline moved to paris in may 2023"),     # re-cased repeat
    ("Caroline moved to Paris in May 2023", "Caroline moved to Paris in May 2023"),      # exact repeat
    ("Caroline moved to Paris last year", "Caroline relocated to Paris last year"),     # paraphrase, same tokens
    ("open the fridge before taking the apple", "always open the fridge before taking the apple"),
])
def test_same_content_merges(a, b):
    assert same_content(a, b) and may_absorb(a, b) and may_absorb(b, a)


def test_a_subset_merges_into_its_superset_only():
    full, part = "Caroline moved to Paris in May 2023", "Caroline moved to Paris"
    assert may_absorb(full, part)            # nothing the shorter one says is lost
    assert not may_absorb(part, full)        # the date would be
    assert missing_content(part, full) == {"may", "2023"}
    assert not same_content(full, part)      # a merge that may keep either one needs both ways


def test_the_switch_is_for_the_benchmark_only(monkeypatch):
    a, b = "fact 46 is w46xbob", "fact 47 is w47xbob"
    assert not may_absorb(a, b)
    monkeypatch.setattr(_content, "ENABLED", False)
    assert may_absorb(a, b)


def test_negations_and_interjections_at_a_sentence_start_are_no_names():
    assert content_words("Don't worry. Wow. Sure thing! Let's go. Can't wait") == set()
    assert content_words("we met Will. Wow, Caroline came") == {"will", "caroline"}

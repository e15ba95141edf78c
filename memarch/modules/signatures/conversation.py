"""Typed DSPy Signatures of the conversation encoders (turn, summary, fact, entity, event).

Every signature reads one dialogue session — "[turn id] speaker: text" lines plus its date — and
answers with typed, turn-cited output. ``feedback`` is empty on the first call; on the one
corrective retry it says why the previous answer was rejected.

Example::

    with resources.lm_context():
        facts = dspy.Predict(ExtractFacts)(session_date="8 May 2023", dialogue=text, feedback="").facts
"""
from __future__ import annotations

from typing import Literal

import dspy
from pydantic import BaseModel, Field


class TurnRewrite(BaseModel):
    """One turn made self-contained."""

    turn_id: str = Field(description="the turn's id exactly as given in brackets, e.g. D1:3")
    standalone: str = Field(description="the turn rewritten to be understood alone: names instead of "
                                        "pronouns, absolute dates instead of relative ones")


class Fact(BaseModel):
    """An atomic fact about a person, keyed so that a newer value can replace an older one."""

    subject: str = Field(description="who or what the fact is about, by name (the speaker's name for 'I')")
    attribute: str = Field(description="short snake_case attribute, e.g. occupation, residence, "
                                       "favorite_food, number_of_children, relationship_status")
    value: str = Field(description="the attribute's value, a few words")
    turn_ids: list[str] = Field(description="ids of the turns stating the fact")


class EntityProfile(BaseModel):
    """What the session says about one named entity."""

    name: str = Field(description="the entity's name as used in the dialogue")
    kind: Literal["person", "place", "organization", "pet", "object", "activity", "other"]
    notes: list[str] = Field(description="short standalone notes about the entity from this session")
    turn_ids: list[str] = Field(description="ids of the turns the notes come from")


class DatedEvent(BaseModel):
    """Something that happened or will happen, with a calendar date."""

    description: str = Field(description="who did what, standalone, e.g. 'Caroline went to an LGBTQ support group'")
    date: str = Field(description="ISO date YYYY-MM-DD the event happened or will happen, resolved "
                                  "against the session date (use the first day of a week/month/year)")
    granularity: Literal["day", "weekend", "week", "month", "season", "year"]
    time_expression: str = Field(description="the words in the dialogue that date it, e.g. 'last week'; "
                                             "empty if the event happened on the session date")
    turn_ids: list[str] = Field(description="ids of the turns that mention the event")


class RewriteTurns(dspy.Signature):
    """Rewrite every turn of the dialogue so it can be understood without the rest of the
    conversation: resolve pronouns to names and relative dates to absolute ones. Keep every fact."""

    session_date: str = dspy.InputField(desc="the date the session took place")
    dialogue: str = dspy.InputField(desc="one '[turn id] speaker: text' line per turn")
    feedback: str = dspy.InputField(desc="why a previous answer was rejected; empty on the first try")
    rewrites: list[TurnRewrite] = dspy.OutputField(desc="one rewrite per turn, in order")


class SummarizeSession(dspy.Signature):
    """Summarise the dialogue session for a long-term memory: who did, felt, planned or revealed
    what, with names and absolute dates. Cite the turns the summary relies on most."""

    session_date: str = dspy.InputField(desc="the date the session took place")
    dialogue: str = dspy.InputField(desc="one '[turn id] speaker: text' line per turn")
    max_words: int = dspy.InputField(desc="upper bound on the summary's length in words")
    feedback: str = dspy.InputField(desc="why a previous answer was rejected; empty on the first try")
    summary: str = dspy.OutputField(desc="the summary, in the third person")
    key_turn_ids: list[str] = dspy.OutputField(desc="ids of the turns the summary draws on")


class ExtractFacts(dspy.Signature):
    """Extract atomic, lasting facts about the people in the dialogue (identity, job, home,
    family, pets, preferences, possessions, plans, habits). One attribute per fact; reuse the
    same attribute name for the same property so a later value can replace an earlier one."""

    session_date: str = dspy.InputField(desc="the date the session took place")
    dialogue: str = dspy.InputField(desc="one '[turn id] speaker: text' line per turn")
    feedback: str = dspy.InputField(desc="why a previous answer was rejected; empty on the first try")
    facts: list[Fact] = dspy.OutputField()


class ProfileEntities(dspy.Signature):
    """List the named entities of the dialogue (the speakers, people, pets, places, organisations,
    works) with what this session says about each of them."""

    session_date: str = dspy.InputField(desc="the date the session took place")
    dialogue: str = dspy.InputField(desc="one '[turn id] speaker: text' line per turn")
    feedback: str = dspy.InputField(desc="why a previous answer was rejected; empty on the first try")
    profiles: list[EntityProfile] = dspy.OutputField()


class ExtractEvents(dspy.Signature):
    """List the events the speakers mention (things done, experienced or planned), each with the
    calendar date it happened or will happen. Resolve relative dates ('yesterday', 'last week',
    'next month') against the session date."""

    session_date: str = dspy.InputField(desc="the date the session took place, ISO YYYY-MM-DD")
    dialogue: str = dspy.InputField(desc="one '[turn id] speaker: text' line per turn")
    feedback: str = dspy.InputField(desc="why a previous answer was rejected; empty on the first try")
    events: list[DatedEvent] = dspy.OutputField()

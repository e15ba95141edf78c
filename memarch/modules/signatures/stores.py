"""Signatures of the `llm_graph` store: extract entities and dated facts from a memory item, and
decide which newly extracted entities duplicate entities already in the graph (Zep/Graphiti-style)."""
from __future__ import annotations

from typing import Optional

import dspy
from pydantic import BaseModel, Field


class Entity(BaseModel):
    """A named thing the text is about: a person, place, object, tool, concept, date."""

    name: str = Field(description="the shortest unambiguous name, as written in the text")
    type: str = Field(default="thing", description="person | place | object | tool | concept | time | thing")


class Fact(BaseModel):
    """One relation the text states between two entities, with when it became true if known."""

    subject: str = Field(description="entity name (must be one of the extracted entities)")
    predicate: str = Field(description="short verb phrase in lower case, e.g. 'works at', 'is in'")
    object: str = Field(description="entity name (must be one of the extracted entities)")
    valid_at: Optional[str] = Field(default=None, description="when the fact became true, as in the text, or null")


class EntityMatch(BaseModel):
    """Whether a new entity is the same real-world thing as an existing one."""

    name: str = Field(description="the new entity, exactly as given")
    same_as: Optional[str] = Field(default=None, description="the existing entity it duplicates, or null")


class ExtractGraph(dspy.Signature):
    """Extract the entities a memory is about and the facts it states between them.

    Keep only entities that matter for later recall; every fact's subject and object must be
    among the extracted entities. Do not invent facts the text does not state."""

    text: str = dspy.InputField(desc="the memory item's text")
    event_time: str = dspy.InputField(desc="when the source episode happened ('unknown' if not known)")
    feedback: str = dspy.InputField(desc="a correction for a previous unusable answer, or empty")
    entities: list[Entity] = dspy.OutputField()
    facts: list[Fact] = dspy.OutputField()


class ResolveEntities(dspy.Signature):
    """For each new entity, decide whether it is the same real-world thing as one of its candidate
    existing entities (aliases, abbreviations, misspellings, nicknames). If unsure, it is new."""

    new_entities: list[str] = dspy.InputField(desc="entities just extracted")
    candidates: dict[str, list[str]] = dspy.InputField(desc="new entity -> similar existing entities")
    context: str = dspy.InputField(desc="the text the new entities come from")
    feedback: str = dspy.InputField(desc="a correction for a previous unusable answer, or empty")
    matches: list[EntityMatch] = dspy.OutputField(desc="one entry per new entity")

"""The `event` encoder: a dated timeline of what the speakers did or will do, relative dates
("yesterday", "last week", "next month") resolved against the session date."""
from __future__ import annotations

import datetime as dt
import re
from typing import Any

import dspy

from memarch.pipeline.dates import ResolvedDate, format_date, resolve_time_expression
from memarch.modules.encoders._conversation_lm import ask_session, known_turn_ids
from memarch.modules.encoders._conversation_text import (Sentence, content_words, session_anchor,
                                                         session_sentences, tense_of, turn_anchor)
from memarch.modules.encoders._conversation_encoder import ConversationEncoder
from memarch.modules.signatures.conversation import ExtractEvents
from memarch.pipeline.episodes import Episode
from memarch.pipeline.items import MemoryItem, make_item_id
from memarch.pipeline.registry import register
from memarch.pipeline.resources import Resources

# Nouns that name an event: a set lookup per word (plurals included) rather than a big regex.
_EVENT_WORDS = frozenset(
    "wedding birthday party concert trip roadtrip vacation holiday festival conference graduation interview "
    "meeting race marathon match parade workshop class camp camping show exhibition exhibit funeral ceremony "
    "hike hiking date performance competition tournament reunion picnic retreat appointment surgery accident "
    "event game gig fair rally march protest recital audition adoption move promotion launch fundraiser "
    "charity volunteer volunteering volunteered lesson session tour visit cruise flight celebration "
    "anniversary shower exam test".split())
_WORD = re.compile(r"[a-z]+")


def names_an_event(text: str) -> bool:
    lowered = text.lower()
    for word in _WORD.findall(lowered):
        if word in _EVENT_WORDS or (word.endswith("s") and word[:-1] in _EVENT_WORDS):
            return True
    return "support group" in lowered or "road trip" in lowered


def detect_event(sentence: Sentence, anchor: dt.date | None) -> tuple[ResolvedDate | None, str | None] | None:
    """(resolved time expression or None, tense) when the sentence reports an event, else None.

    An event is a past or future statement that is dated (a time expression) or names an event
    ("wedding", "trip", "support group"); a question is not an event."""
    text = sentence.text
    if text.rstrip().endswith("?") or len(content_words(text)) < 2:
        return None
    tense = tense_of(text)
    when = resolve_time_expression(text, anchor, tense)
    noun = names_an_event(text)
    if (when is not None and (tense is not None or noun)) or (noun and tense is not None):
        return when, tense
    return None


@register("encoder", "event", families="conversation", uses_lm=True, rank=5,
          description="dated timeline of events, relative dates resolved against the session date")
class EventEncoder(ConversationEncoder):
    """One item per event, ``event_time`` = the date it happened (or will happen).

    Example::

        items = EventEncoder(resources).encode(session)   # session dated 8 May 2023
        items[0].text  # "7 May 2023 (yesterday, said 8 May 2023) - Caroline: I went to a support group yesterday."
        items[0].event_time  # "2023-05-07"
    """

    def __init__(self, resources: Resources | None = None, **config: Any):
        super().__init__(resources, **config)
        self.extract = dspy.Predict(ExtractEvents)

    def encode_free(self, episode: Episode) -> list[MemoryItem]:
        session = session_anchor(episode)
        said_on = {t.id: turn_anchor(t, session) for t in episode.turns}
        items = []
        for sentence in session_sentences(episode):
            said = said_on[sentence.turn_id]
            found = detect_event(sentence, said)
            if found is None:
                continue
            when, tense = found
            items.append(self._item(
                episode, f"{sentence.speaker}: {sentence.text}", when.date if when else said,
                when.granularity if when else "session", when.phrase if when else "", said,
                [sentence.turn_id], method="rules", tense=tense or "", speaker=sentence.speaker))
        return items

    def encode_lm(self, episode: Episode) -> list[MemoryItem]:
        def check(pred: dspy.Prediction) -> None:
            for event in pred.events:
                if not event.description.strip():
                    raise ValueError("an event has no description")
                try:
                    dt.date.fromisoformat(event.date.strip())
                except ValueError:
                    raise ValueError(f"event date {event.date!r} is not an ISO date YYYY-MM-DD") from None
                known_turn_ids(episode, event.turn_ids, f"event {event.description[:40]!r}")

        pred = ask_session(self.extract, self.resources, episode, check, iso_date=True)
        session = session_anchor(episode)
        return [self._item(episode, event.description.strip(), dt.date.fromisoformat(event.date.strip()),
                           event.granularity, event.time_expression.strip(), session,
                           known_turn_ids(episode, event.turn_ids, "an event"), method="lm")
                for event in pred.events]

    def _item(self, episode: Episode, description: str, date: dt.date | None, granularity: str,
              phrase: str, said: dt.date | None, turn_ids: list[str], method: str, **extra: Any) -> MemoryItem:
        if date is None:
            when = "undated"
        elif granularity == "session":  # no time expression: all we know is when it was mentioned
            when = f"{format_date(date)} (date of mention)"
        else:
            when = ResolvedDate(date, granularity, phrase).describe()
            if phrase and said:
                when += f" ({phrase}, said {format_date(said)})"
        text = f"{when} - {description}"
        return MemoryItem(
            text=text, kind=self.name, id=make_item_id(self.name, episode.id, text, *turn_ids),
            fields={"description": description, "date": date.isoformat() if date else None,
                    "granularity": granularity, "time_expression": phrase, "method": method, **extra},
            episode_id=episode.id, source_ids=turn_ids,
            event_time=date.isoformat() if date else None)

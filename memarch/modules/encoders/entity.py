"""The `entity` encoder: per-entity profile notes — one item per (entity, session) gathering what the
session says about a speaker, a person, a pet, a place or an organisation."""
from __future__ import annotations

from typing import Any

import dspy

from memarch.pipeline.dates import format_date
from memarch.modules.encoders._conversation_lm import ask_session, known_turn_ids
from memarch.modules.encoders._conversation_text import (Sentence, content_words, is_first_person, known_names,
                                                         names_in, session_anchor, session_sentences)
from memarch.modules.encoders._conversation_encoder import ConversationEncoder
from memarch.modules.signatures.conversation import ProfileEntities
from memarch.pipeline.episodes import Episode
from memarch.pipeline.items import MemoryItem, make_item_id
from memarch.pipeline.registry import register
from memarch.pipeline.resources import Resources


def entity_notes(sentences: list[Sentence], speakers: list[str], *, min_content: int = 2,
                 max_notes: int = 6) -> dict[str, list[Sentence]]:
    """Sentences grouped by the entities they mention: proper names in the sentence, and the
    speaker for a first-person sentence. Short sentences (greetings, vocatives) carry no note; an
    entity keeps its ``max_notes`` most informative sentences, in dialogue order."""
    aliases = _speaker_aliases(speakers)
    known = known_names(sentences, speakers)
    groups: dict[str, list[tuple[int, Sentence]]] = {}
    for sentence in sentences:
        names = [aliases.get(n.lower(), n) for n in names_in(sentence.text, known)]
        # Addressing someone ("Wow, Caroline!") says nothing about them: speaker names don't count.
        informative = len([w for w in content_words(sentence.text) if w not in aliases])
        if informative < min_content:
            continue
        if is_first_person(sentence.text):
            names.append(sentence.speaker)
        for name in dict.fromkeys(names):
            groups.setdefault(name, []).append((informative, sentence))
    out: dict[str, list[Sentence]] = {}
    for name, scored in groups.items():
        best = sorted(scored, key=lambda p: (-p[0], p[1].position))[:max_notes]
        out[name] = sorted((s for _, s in best), key=lambda s: s.position)
    return out


def _speaker_aliases(speakers: list[str]) -> dict[str, str]:
    """Short forms of a speaker's name ("Mel" for "Melanie") map to the speaker."""
    aliases = {}
    for speaker in speakers:
        first = speaker.split()[0]
        aliases[speaker.lower()] = speaker
        for n in range(3, len(first)):
            aliases.setdefault(first[:n].lower(), speaker)
    return aliases


def entity_key(name: str) -> str:
    return f"entity|{name.strip().lower()}"


@register("encoder", "entity", families="conversation", uses_lm=True, rank=4,
          description="per-entity profile notes, one item per (entity, session)")
class EntityEncoder(ConversationEncoder):
    """What a session says about each named entity. ``fields["entity_key"]`` (``"entity|<name>"``)
    groups an entity's notes across sessions; the item ``key`` also carries the session, because a
    profile note adds to earlier ones rather than contradicting them (a key-upserting manager must
    not supersede Monday's notes with Friday's).

    Example::

        items = EntityEncoder(resources, max_notes=6).encode(session)
        [it.fields["entity_key"] for it in items]  # ["entity|caroline", "entity|melanie", ...]

    Args:
        max_notes: most sentences (LM-free) or notes (LM) kept per entity (default 6).
        min_content: content words a sentence needs to be a note, names excluded (default 2).
    """

    def __init__(self, resources: Resources | None = None, *, max_notes: int = 6, min_content: int = 2,
                 **config: Any):
        super().__init__(resources, max_notes=max_notes, min_content=min_content, **config)
        self.max_notes, self.min_content = max_notes, min_content
        self.profile = dspy.Predict(ProfileEntities)

    def encode_free(self, episode: Episode) -> list[MemoryItem]:
        speakers = list(dict.fromkeys(t.speaker for t in episode.turns))
        groups = entity_notes(session_sentences(episode), speakers, min_content=self.min_content,
                              max_notes=self.max_notes)
        items = []
        for name, sentences in groups.items():
            notes = [f"{s.speaker}: {s.text}" for s in sentences]
            kind = "speaker" if name in speakers else "named"
            items.append(self._item(episode, name, kind, notes, [s.turn_id for s in sentences], "mentions"))
        return items

    def encode_lm(self, episode: Episode) -> list[MemoryItem]:
        def check(pred: dspy.Prediction) -> None:
            for profile in pred.profiles:
                if not profile.name.strip() or not [n for n in profile.notes if n.strip()]:
                    raise ValueError(f"entity profile without a name or notes: {profile}")
                known_turn_ids(episode, profile.turn_ids, f"the profile of {profile.name}")

        pred = ask_session(self.profile, self.resources, episode, check)
        items: dict[str, MemoryItem] = {}
        for profile in pred.profiles:
            notes = [n.strip() for n in profile.notes if n.strip()][: self.max_notes]
            item = self._item(episode, profile.name.strip(), profile.kind, notes,
                              known_turn_ids(episode, profile.turn_ids, "a profile"), "lm")
            items[item.key] = item  # one item per entity and session
        return list(items.values())

    def _item(self, episode: Episode, name: str, kind: str, notes: list[str], turn_ids: list[str],
              method: str) -> MemoryItem:
        day = session_anchor(episode)
        when = f", {format_date(day)}" if day else ""
        text = f"About {name}{when}: " + " | ".join(notes)
        key = f"{entity_key(name)}|{episode.id}"
        return MemoryItem(
            text=text, kind=self.name, id=make_item_id(self.name, episode.id, text, key),
            fields={"name": name, "entity_kind": kind, "notes": notes, "method": method,
                    "entity_key": entity_key(name)},
            episode_id=episode.id, source_ids=list(dict.fromkeys(turn_ids)), key=key,
            event_time=day.isoformat() if day else None)

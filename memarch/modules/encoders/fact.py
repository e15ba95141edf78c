"""The `fact` encoder: atomic facts keyed by subject and attribute ("caroline|residence"), so a later
fact with the same key supersedes an earlier one (the manager does the superseding).

LM-free path: first-person statement patterns ("I work as ...", "I moved to ...", "my dog's name
is ...", "I have two kids", "I love ...") normalised to (speaker, attribute, value)."""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

import dspy

from memarch.pipeline.dates import format_date
from memarch.modules.encoders._conversation_lm import ask_session, known_turn_ids
from memarch.modules.encoders._conversation_text import session_anchor, session_sentences, slug, turn_anchor
from memarch.modules.encoders._conversation_encoder import ConversationEncoder
from memarch.modules.signatures.conversation import ExtractFacts
from memarch.pipeline.episodes import Episode
from memarch.pipeline.items import MemoryItem, make_item_id
from memarch.pipeline.registry import register
from memarch.pipeline.resources import Resources

# A value runs to the end of its clause and stops at a conjunction or a subordinate clause.
_VALUE = r"(?P<v>[^.,;:!?()]+)"
_CLAUSE_STOP = re.compile(r"\s+(?:and|but|because|so|since|when|which|who|that|with|as|if|though|"
                          r"while|or|after|before|until|now|too|lately|recently|right now|these days|"
                          r"yesterday|today|last|next|this|for the|in the past|in order to)\b.*$|\s+-.*$",
                          re.IGNORECASE)
_TRAILING = re.compile(r"(?:\s+(?:of|the|a|an|to|at|in|on|for|my|your|it|its|it's|and|really|so|too))+$",
                       re.IGNORECASE)
_OWNER = re.compile(r"\bmy\b", re.IGNORECASE)
_NOT_OBJECT = re.compile(r"^(?:it|that|this|you|him|her|them|how|what|the way|when|to hear|hearing|"
                         r"seeing|being|those|these|one|all|everything|anything|something|so)\b", re.IGNORECASE)
_KEY_STOP = frozenset("a an the of to my their your his her its in on at for and".split())
_I = r"\b(?:I|i)"
_ADV = r"(?:(?:really|absolutely|totally|just|also|still|now|currently|recently|finally|actually|"\
       r"originally|so|kinda|truly) )*"
_RELATIONS = ("name|birthday|job|husband|wife|partner|boyfriend|girlfriend|son|daughter|kid|dog|cat|"
              "pet|puppy|brother|sister|mom|mother|dad|father|hometown|goal|dream|hobby|car|house|"
              "major|degree|boss|best friend|favou?rite [a-z]+(?: [a-z]+)?")
_COUNTABLE = ("kids?|child|children|sons?|daughters?|dogs?|cats?|pets?|siblings?|brothers?|sisters?|"
              "cars?|houses?|jobs?|boyfriend|girlfriend|husband|wife|partner|grandchild(?:ren)?|"
              "grandkids?|horses?|birds?|fish|guitars?|bikes?|tattoos?|degrees?|roommates?|puppies|puppy")
_NUMBER = r"(?P<n>\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|no)"
_THIRD_PERSON = {"love": "loves", "like": "likes", "enjoy": "enjoys", "adore": "adores", "hate": "hates",
                 "dislike": "dislikes", "can't stand": "can't stand", "don't like": "doesn't like",
                 "detest": "detests", "started": "started", "began": "began", "took up": "took up",
                 "picked up": "picked up", "quit": "quit", "stopped": "stopped", "gave up": "gave up"}


@dataclass(frozen=True)
class FactPattern:
    """One statement pattern. ``attribute`` and ``template`` are formatted with the match groups
    (``v`` value, ``a`` attribute words, ``verb``, ``n``) plus ``S`` (the speaker) and ``obj``
    (the value's normal form, used when a value is itself part of the key)."""

    attribute: str
    pattern: re.Pattern
    template: str


def _p(regex: str) -> re.Pattern:
    return re.compile(regex, re.IGNORECASE)


PATTERNS: tuple[FactPattern, ...] = (
    FactPattern("occupation", _p(rf"{_I}(?:'m| am)? {_ADV}work(?:ing|s)? as {_VALUE}"), "{S} works as {v}"),
    FactPattern("employer", _p(rf"{_I}(?:'m| am)? {_ADV}work(?:ing|s)? (?:at|for) {_VALUE}"), "{S} works at {v}"),
    FactPattern("residence", _p(rf"{_I}(?:'ve| have)? {_ADV}(?:moved|relocated) (?:back )?(?:to|into) {_VALUE}"),
                "{S} lives in {v}"),
    FactPattern("residence", _p(rf"{_I}(?:'m| am)? {_ADV}liv(?:e|ing) in {_VALUE}"), "{S} lives in {v}"),
    FactPattern("origin", _p(rf"{_I}(?:'m| am) {_ADV}from {_VALUE}"), "{S} is from {v}"),
    FactPattern("age", _p(rf"{_I}(?:'m| am) (?P<v>\d{{1,3}}) years? old"), "{S} is {v} years old"),
    FactPattern("age", _p(rf"{_I} {_ADV}turned (?P<v>\d{{1,3}})\b"), "{S} is {v} years old"),
    FactPattern("relationship_status",
                _p(rf"{_I}(?:'m| am| got) {_ADV}(?P<v>married|single|engaged|divorced|separated|widowed)\b"),
                "{S} is {v}"),
    FactPattern("studies", _p(rf"{_I}(?:'m| am)? {_ADV}(?:study|studying|majoring in|major in) {_VALUE}"),
                "{S} studies {v}"),
    FactPattern("{a}", _p(rf"\bmy (?P<a>{_RELATIONS})(?:'s name)? (?:is|was|'s) (?:called |named )?{_VALUE}"),
                "{S}'s {a} is {v}"),
    FactPattern("{a} count", _p(rf"{_I}(?: have|'ve got| have got|'ve) {_NUMBER} (?P<a>{_COUNTABLE})\b"),
                "{S} has {n} {a}"),
    FactPattern("feeling about {obj}",
                _p(rf"{_I} {_ADV}(?P<verb>love|like|enjoy|adore|hate|dislike|can't stand|don't like|detest) {_VALUE}"),
                "{S} {verb} {v}"),
    FactPattern("activity {obj}",
                _p(rf"{_I}(?:'ve| have)? {_ADV}(?P<verb>started|began|took up|picked up|quit|stopped|gave up) {_VALUE}"),
                "{S} {verb} {v}"),
    FactPattern("plan {obj}",
                _p(rf"{_I}(?:'m| am) {_ADV}(?:going to|gonna|planning to|planning on|hoping to|thinking of|"
                   rf"thinking about) {_VALUE}"), "{S} plans to {v}"),
    FactPattern("plan {obj}", _p(rf"{_I} {_ADV}(?:plan|hope|intend|want|wanna) to {_VALUE}"), "{S} plans to {v}"),
    FactPattern("identity {obj}", _p(rf"{_I}(?:'m| am) {_ADV}(?:a|an) (?!bit\b|little\b|lot\b|tad\b)(?P<v>[^.,;!?()]+)"),
                "{S} is a {v}"),
)


def _singular(noun: str) -> str:
    """Count attributes are keyed by the singular ("I have a kid" and "I have two kids" collide)."""
    irregular = {"children": "child", "grandchildren": "grandchild", "puppies": "puppy"}
    if noun in irregular:
        return irregular[noun]
    return noun[:-1] if noun.endswith("s") and not noun.endswith("ss") else noun


def clip_value(raw: str, max_words: int = 8) -> str:
    """The head of a captured value: cut at the first conjunction or subordinate clause (the
    first word is kept: "to" in "I love to paint" is not a clause)."""
    head, _, rest = raw.strip().partition(" ")
    value = f"{head} {_CLAUSE_STOP.sub('', ' ' + rest).strip()}".strip()
    value = _TRAILING.sub("", " ".join(value.split()[:max_words]))
    return _OWNER.sub("their", value).strip(" '\"-")


def extract_facts(subject: str, sentence: str) -> list[dict[str, str]]:
    """(subject, attribute, value, text) of every fact pattern matching a first-person sentence."""
    out: list[dict[str, str]] = []
    seen: set[str] = set()
    for fp in PATTERNS:
        for m in fp.pattern.finditer(sentence):
            groups = {k: (v or "") for k, v in m.groupdict().items()}
            raw = groups["v"] if "v" in groups else f"{groups['n']} {groups['a']}"
            value = clip_value(raw)
            if not value or _NOT_OBJECT.match(value):
                continue
            if fp.template.startswith("{S} plans") and len(value.split()) < 2:
                continue  # "I'm gonna make" says nothing that can be recalled
            if fp.template.startswith("{S} plans") and value.split()[0].lower() in ("the", "a", "an", "my"):
                value = f"go to {value}"  # "I'm going to the beach" plans a trip, not a verb
            groups["v"] = value
            groups["verb"] = _THIRD_PERSON.get(groups.get("verb", "").lower(), groups.get("verb", ""))
            groups["a"] = groups.get("a", "").lower()
            noun = _singular(groups["a"]) if "{a}" in fp.attribute and "n" in groups else groups["a"]
            # The object part of a key: its first content words ("sound of the waves" -> "sound waves").
            obj = " ".join([w for w in slug(re.sub(r"^to\s+", "", value)).split() if w not in _KEY_STOP][:4])
            if not obj:
                continue
            attribute = "_".join(fp.attribute.format(obj=obj, a=noun).split())
            if attribute in seen:  # one fact per attribute and sentence: the first pattern wins
                continue
            seen.add(attribute)
            out.append({"subject": subject, "attribute": attribute, "value": value,
                        "text": fp.template.format(S=subject, **groups)})
    return out


def fact_key(subject: str, attribute: str) -> str:
    return f"{subject.strip().lower()}|{attribute}"


def normal_attribute(attribute: str) -> str:
    return "_".join(slug(attribute).split())


@register("encoder", "fact", families="conversation", uses_lm=True, rank=3,
          description="atomic facts keyed by subject|attribute (newer supersedes older)")
class FactEncoder(ConversationEncoder):
    """Atomic facts about the speakers, each an item with ``key = "subject|attribute"``.

    Example::

        items = FactEncoder(resources).encode(session)
        items[0].text, items[0].key  # "Caroline lives in Boston (stated 8 May 2023)", "caroline|residence"
    """

    def __init__(self, resources: Resources | None = None, **config: Any):
        super().__init__(resources, **config)
        self.extract = dspy.Predict(ExtractFacts)

    def encode_free(self, episode: Episode) -> list[MemoryItem]:
        session = session_anchor(episode)
        days = {t.id: turn_anchor(t, session) for t in episode.turns}
        items: dict[str, MemoryItem] = {}
        for sentence in session_sentences(episode):
            for fact in extract_facts(sentence.speaker, sentence.text):
                item = self._item(episode, fact["subject"], fact["attribute"], fact["value"], fact["text"],
                                  [sentence.turn_id], days[sentence.turn_id], "pattern")
                # Within a session the last statement of a key is the one that stands.
                items.pop(item.key, None)
                items[item.key] = item
        return list(items.values())

    def encode_lm(self, episode: Episode) -> list[MemoryItem]:
        def check(pred: dspy.Prediction) -> None:
            for fact in pred.facts:
                if not (fact.subject.strip() and normal_attribute(fact.attribute) and fact.value.strip()):
                    raise ValueError(f"a fact has an empty subject, attribute or value: {fact}")
                known_turn_ids(episode, fact.turn_ids, f"fact {fact.subject}|{fact.attribute}")

        pred = ask_session(self.extract, self.resources, episode, check)
        day = session_anchor(episode)
        items: dict[str, MemoryItem] = {}
        for fact in pred.facts:
            attribute = normal_attribute(fact.attribute)
            text = f"{fact.subject.strip()}'s {attribute.replace('_', ' ')}: {fact.value.strip()}"
            item = self._item(episode, fact.subject.strip(), attribute, fact.value.strip(), text,
                              known_turn_ids(episode, fact.turn_ids, "a fact"), day, "lm")
            items.pop(item.key, None)
            items[item.key] = item
        return list(items.values())

    def _item(self, episode: Episode, subject: str, attribute: str, value: str, text: str,
              turn_ids: list[str], day: dt.date | None, method: str) -> MemoryItem:
        if day:
            text = f"{text} (stated {format_date(day)})"
        key = fact_key(subject, attribute)
        return MemoryItem(
            text=text, kind=self.name, id=make_item_id(self.name, episode.id, text, key),
            fields={"subject": subject, "attribute": attribute, "value": value, "method": method},
            episode_id=episode.id, source_ids=turn_ids, key=key,
            event_time=day.isoformat() if day else None)

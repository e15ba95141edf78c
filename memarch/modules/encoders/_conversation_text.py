"""Text helpers shared by the conversation encoders: sentences with their turn ids, words, names,
tense, and the one way a turn or a session is rendered (for items and for LM prompts).

Pure Python and compiled regexes: LM-free encoding of all LoCoMo turns must take seconds.

Example::

    >>> [s.text for s in split_turn(Turn("D1:3", "Caroline", "I went. It was great!"))]
    ['I went.', 'It was great!']
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from memarch.pipeline.dates import format_date, parse_session_date
from memarch.pipeline.episodes import Episode, Turn

STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most my
myself no nor not now of off on once only or other our ours ourselves out over own same she should so
some such than that the their theirs them themselves then there these they this those through to too
under until up very was we were what when where which while who whom why will with would you your yours
yourself yourselves im ive id ill youre youve its dont didnt doesnt isnt wasnt cant wont thats whats
also really so oh yeah yes hey hi wow thanks thank like just got get gonna lot lots much many well
""".split())

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(]?[A-Z0-9])")
_WORD = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)?")
# A run of capitalised words ("New York", "Pride Parade"); apostrophe-s is dropped from the name.
_CAPITALISED_RUN = re.compile(r"\b[A-Z][a-zA-Z]+(?:\s+(?:of\s+|the\s+)?[A-Z][a-zA-Z]+)*")
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|myself|we|our|us)\b")
_FUTURE = re.compile(r"\b(?:will|'ll|going to|gonna|plan(?:ning)? to|about to|hope to|want to|next|"
                     r"tomorrow|upcoming|soon|can't wait)\b", re.IGNORECASE)
_IRREGULAR_PAST = ("went|got|had|was|were|did|made|saw|took|came|met|found|gave|ran|bought|began|"
                   "brought|felt|left|told|thought|said|won|lost|wrote|read|ate|drove|flew|swam|sang|"
                   "sold|spent|taught|caught|built|held|heard|kept|knew|paid|put|sat|slept|spoke|"
                   "stood|threw|understood|wore|became|chose|fell|forgot|grew|hung|hid|rode|rose|"
                   "shook|stole|struck|swore|tore|woke|broke|drew|ground")
_PAST = re.compile(rf"\b(?:{_IRREGULAR_PAST}|[a-z]{{2,}}ed|just|ago|yesterday|last)\b", re.IGNORECASE)
# Capitalised words that are not entities: pronouns, interjections, calendar words.
NOT_NAMES = frozenset("""
I I'm I've I'd I'll Im Ive Hey Hi Hello Wow Oh Yeah Yes No Thanks Thank Omg OK Okay Congrats Haha Lol
Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May June July
August September October November December Mom Dad Mum God Sure Awesome Great Nice Cool Aww Bye
Keep Stay Let Take Have Good Happy Hope Enjoy See Talk Catch Hang Shares Glad Maybe Plus Btw Anyway
""".split())


@dataclass(frozen=True)
class Sentence:
    """A sentence of a session with the turn it came from (provenance for every derived item)."""

    text: str
    turn_id: str
    speaker: str
    position: int  # index of the sentence in the session


def split_sentences(text: str) -> list[str]:
    """Sentences of one turn; a turn without end punctuation is one sentence."""
    parts = (p.strip() for p in _SENTENCE_END.split(text.strip()))
    return [p for p in parts if p]


def split_turn(turn: Turn, start: int = 0) -> list[Sentence]:
    return [Sentence(s, turn.id, turn.speaker, start + i) for i, s in enumerate(split_sentences(turn.text))]


def session_sentences(episode: Episode) -> list[Sentence]:
    out: list[Sentence] = []
    for turn in episode.turns:
        out.extend(split_turn(turn, len(out)))
    return out


def words(text: str) -> list[str]:
    return _WORD.findall(text)


def content_words(text: str) -> list[str]:
    """Lower-cased words without stopwords or apostrophes (the unit of overlap and TF-IDF)."""
    out = []
    for w in _WORD.findall(text):
        w = w.lower().replace("'", "")
        if w not in STOPWORDS and len(w) > 1:
            out.append(w)
    return out


def names_in(text: str, known: frozenset[str] = frozenset()) -> list[str]:
    """Proper names: runs of capitalised words not at the start of a sentence (where any word is
    capitalised), minus pronouns, interjections and calendar words. A sentence-initial word counts
    when it is in ``known`` (names seen mid-sentence in the session, speakers): "Mary moved"."""
    out: list[str] = []
    not_names = NOT_NAMES | {"of", "the"}
    for sentence_start, m in _runs_with_position(text):
        run = m.group(0).split()
        if sentence_start and run[0] not in known:
            run = run[1:]  # the first word is capitalised by grammar, not by being a name
        while run and run[0] in not_names:
            run = run[1:]
        while run and run[-1] in not_names:
            run = run[:-1]
        if run:
            out.append(" ".join(run))
    return list(dict.fromkeys(out))


_SUBJECT_START = re.compile(r"([A-Z][a-z]+) ([a-z]+)\b")
_PRONOUNS = frozenset("i you we they he she it me us them that this so the a an to".split())


def known_names(sentences: list[Sentence], speakers: list[str]) -> frozenset[str]:
    """Words a session uses as names: the speakers', those capitalised mid-sentence, and those that
    start two or more sentences yet never appear in lower case ("Mary moved...", "Mary went...")."""
    found = {w for sp in speakers for w in sp.split()}
    lower: set[str] = set()
    initial: dict[str, int] = {}
    for s in sentences:
        for name in names_in(s.text):
            found.update(name.split())
        lower.update(w for w in _WORD.findall(s.text) if w[0].islower())
        # "Mary moved" looks like a subject; "Glad you...", "Maybe we...", "Plus, I..." do not.
        m = _SUBJECT_START.match(s.text)
        if m and m.group(2).lower() not in _PRONOUNS:
            initial[m.group(1)] = initial.get(m.group(1), 0) + 1
    for word, n in initial.items():
        low = word.lower()
        if (n >= 2 and low not in lower and low not in STOPWORDS and len(word) > 2
                and not low.endswith(("ing", "ly", "ed", "s"))):
            found.add(word)
    return frozenset(found - NOT_NAMES)


def _runs_with_position(text: str):
    for m in _CAPITALISED_RUN.finditer(text):
        before = text[:m.start()].rstrip()
        yield (not before or before[-1] in ".!?\"'(:;-["), m


def is_first_person(text: str) -> bool:
    return _FIRST_PERSON.search(text) is not None


def tense_of(text: str) -> str | None:
    """"future" if the sentence speaks of what will happen, "past" if of what happened, else None."""
    if _FUTURE.search(text):
        return "future"
    if _PAST.search(text):
        return "past"
    return None


def session_anchor(episode: Episode) -> dt.date | None:
    """The calendar day of a session: the episode time, else the first dated turn, else metadata."""
    for value in (episode.time, *(t.date for t in episode.turns),
                  episode.metadata.get("date_time"), episode.metadata.get("date")):
        d = parse_session_date(value) if value else None
        if d is not None:
            return d
    return None


def turn_anchor(turn: Turn, session: dt.date | None) -> dt.date | None:
    return parse_session_date(turn.date) if turn.date else session


def render_turn(turn: Turn, day: dt.date | None, *, captions: bool = True) -> str:
    """"Caroline (7 May 2023): I went to the support group. [shares a photo of a lake]"."""
    when = f" ({format_date(day)})" if day else ""
    text = f"{turn.speaker}{when}: {turn.text.strip()}"
    caption = turn.metadata.get("blip_caption") if captions else None
    if caption:
        text += f" [shares {caption.strip()}]"
    return text


def render_dialogue(episode: Episode) -> str:
    """The session as an LM reads it: one "[turn id] speaker: text" line per turn."""
    lines = []
    for turn in episode.turns:
        caption = turn.metadata.get("blip_caption")
        extra = f" [shares {caption}]" if caption else ""
        lines.append(f"[{turn.id}] {turn.speaker}: {turn.text.strip()}{extra}")
    return "\n".join(lines)


def slug(text: str) -> str:
    """Normal form used in keys: lower case, words joined by single spaces, no articles."""
    parts = [w.lower().replace("'", "") for w in _WORD.findall(text)]
    while parts and parts[0] in ("a", "an", "the", "my", "some"):
        parts = parts[1:]
    return " ".join(parts)

"""Entity extraction without an LM, for the `graph` store: capitalised names, numbers and dates,
quoted strings, and the most frequent content words after stopword removal."""
from __future__ import annotations

import re
from collections import Counter

from memarch.pipeline.text_caches import TextCaches, TextMemos

STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before being below
between both but by can could did do does doing done down during each either else ever every few for from
further get gets got had has have having he her here hers herself him himself his how however i if in into
is it its itself just let like made make many may me might more most much must my myself never no nor not
now of off often on once only or other our ours ourselves out over own per please really same she should
since so some still such than that the their theirs them themselves then there these they this those
through thus to too under until up upon us use used using very via was way we well were what when where
whether which while who whom whose why will with within without would yes yet you your yours yourself
yourselves one two next first last new take took go went see saw said says say thing things something
""".split())

# Imperative verbs that open agent steps ("Open the fridge.") and are not names.
OPENERS = frozenset({"open", "close", "check", "look", "find", "put", "pick", "move", "try", "use", "avoid",
                     "when", "if", "always", "never", "first", "then", "search", "read", "write", "ask",
                     "answer", "go", "walk", "examine", "cook", "slice", "inventory"})

_NOT_NAMES = STOPWORDS | OPENERS

MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|december|"
          "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_DATE = re.compile(
    rf"\b(?:\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}/\d{{1,2}}/\d{{2,4}}|"
    rf"(?:{MONTHS})\.?\s+\d{{4}}|\d{{1,2}}\s+(?:{MONTHS})\.?(?:,?\s+\d{{4}})?|(?:{MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?)\b",
    re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?:%|\b)")
_QUOTED = re.compile(r"[\"“']([^\"”']{2,60})[\"”']")
_NAME = re.compile(r"\b[A-Z][a-zA-Z0-9'\-]*(?:\s+(?:of\s+|the\s+|de\s+)?[A-Z][a-zA-Z0-9'\-]*)*")
_WORD = re.compile(r"[a-z][a-z0-9\-]+")
_SPACE = re.compile(r"\s+")
_EDGE_PUNCT = re.compile(r"^[^\w]+|[^\w]+$")


def normalise(name: str) -> str:
    """Canonical entity key: lower case, single spaces, no surrounding punctuation or article."""
    s = _SPACE.sub(" ", _EDGE_PUNCT.sub("", name.strip().lower()))
    for article in ("the ", "a ", "an "):
        if s.startswith(article) and len(s) > len(article) + 1:
            s = s[len(article):]
    return s


def extract_entities(text: str, *, max_terms: int = 3, texts: TextCaches | None = None) -> list[str]:
    """Entities of ``text`` as normalised names: dates, quoted strings, names, numbers, then the
    ``max_terms`` most frequent content words (``texts``: whose memo keeps them, the store's
    `Resources.texts`).

    Example::

        extract_entities('Caroline moved to Paris on 8 May 2023 and said "never again".')
        # ['8 may 2023', 'never again', 'caroline', 'paris', 'moved']
    """
    if texts is None:
        return _extract_entities(text, max_terms=max_terms)
    return list(texts[Entities].entities(text, max_terms))


class Entities(TextMemos):
    """`extract_entities` as one owner (`Resources.texts`) keeps it: every architecture with a
    graph store links the same texts, each extracted once per owner."""

    def __init__(self, texts: TextCaches):
        super().__init__(texts)
        self.entities = self.memo(lambda text, max_terms: tuple(_extract_entities(text, max_terms=max_terms)),
                                  1 << 16, "entities")


def _extract_entities(text: str, *, max_terms: int = 3) -> list[str]:
    """Uncached `extract_entities`."""
    found: list[str] = []

    def keep(name: str) -> None:
        n = normalise(name)
        if n and n not in STOPWORDS and (len(n) > 1 or n.isdigit()) and n not in found:
            found.append(n)

    spans: list[tuple[int, int]] = []
    for m in _DATE.finditer(text):
        keep(m.group(0))
        spans.append(m.span())
    for m in _QUOTED.finditer(text):
        keep(m.group(1))
    for m in _NAME.finditer(text):
        words = m.group(0).split()
        # Leading capitalised function words ("Use the Red Key", "The Louvre") are not the name.
        while words and words[0].lower() in _NOT_NAMES:
            words.pop(0)
        while words and words[0].lower() in ("of", "the", "de"):
            words.pop(0)
        if words:
            keep(" ".join(words))
    for m in _NUMBER.finditer(text):
        if not any(a <= m.start() < b for a, b in spans):
            keep(m.group(0))
    words = [w for w in _WORD.findall(text.lower()) if w not in STOPWORDS and len(w) >= 4]
    for word, _ in sorted(Counter(words).items(), key=lambda kv: (-kv[1], -len(kv[0]), kv[0]))[:max_terms]:
        keep(word)
    return found

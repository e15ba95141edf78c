"""Content words: the words that make a fact that fact (numbers, dates, names, codes). Two texts
that differ in them are different facts, however close their embeddings are, so no manager path
merges or supersedes one by the other as a near-duplicate (cosine or cluster merge).

The rule, the one place every near-duplicate path asks (`may_absorb`, `same_content`):

- **Content words** of a text (lower-cased; a possessive ``'s`` and the commas of ``1,000`` dropped):
  1. every word with a digit — numbers, amounts, times, ISO and numeric dates (``2023-05-01``,
     ``7:30``), and codes mixing letters and digits (``w47xbob``, ``A320``);
  2. number words (``two`` ... ``billion``; not ``one``, which is also a pronoun — "the red one"),
     month and weekday names in any case (not lower-case ``may`` / ``march``, which are verbs),
     and ``yesterday`` / ``today`` / ``tomorrow`` / ``tonight``;
  3. capitalised words — names, places, titles, capitalised months — except ``I`` (``I'm``...),
     negations (``Don't``, ``Can't``) and, at a sentence start (of the text, or after . ! ? : ; or a
     line break), function words (``STOPWORDS``: ``The``, ``We``, ``It's``, ``May I``) and
     interjections (``OPENERS``: ``Wow``, ``Sure``, ``Let's``); inside a sentence a capitalised
     function word is a name or a month ("in May", "met Will"). Any other capitalised word at a sentence
     start counts too: names start sentences ("Caroline moved to
     Paris" vs "Melanie moved to Paris"), so "Went to the gym" and "Going to the gym" are not
     merged either — wrongly keeping two paraphrases costs a few words, wrongly merging two facts
     loses one.
- **May ``survivor`` absorb ``absorbed``?** Only if every content word of ``absorbed`` occurs, as a
  word in any case, in ``survivor``. An exact repeat, a re-cased or re-punctuated one, and a
  paraphrase with the same content words merge; a text whose content words are a **subset** of
  the survivor's merges into it (nothing it says is lost: "Caroline moved to Paris" into "Caroline
  moved to Paris in May 2023"), never the other way round.
- **Duplicates** (`same_content`), for merges whose survivor is chosen later (cluster merges): each
  may absorb the other.

``ENABLED`` switches the rule off for a before/after measurement only (``benchmarks/bench_dedup.py``);
nothing else sets it.
"""
from __future__ import annotations

import re

from memarch.modules.managers._budget import STOPWORDS
from memarch.pipeline.text_caches import TextCaches, TextMemos

ENABLED = True

_WORD = re.compile(r"[^\W_]+(?:['’.,:/-][^\W_]+)*")
_PART = re.compile(r"[.,:/-]")
_DIGIT = re.compile(r"\d")
_POSSESSIVE = re.compile(r"['’]s$")
_OPENING = "\"'“‘([*_-"  # what may stand between a sentence break and its first word
NUMBER_WORDS = frozenset("""two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen
sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand
million billion""".split())
# Sentence openers that are no names although STOPWORDS lacks them: interjections, greetings, "Let's".
OPENERS = frozenset("""let hello bye goodbye sure wow cool awesome great nice haha lol yep yup nope please sorry
congrats congratulations""".split())
DATE_WORDS = frozenset("""january february april june july august september october november december monday
tuesday wednesday thursday friday saturday sunday yesterday today tomorrow tonight""".split())


def _sentence_start(text: str, at: int) -> bool:
    """Is the word at ``at`` the first of a sentence (of the text, or after . ! ? : ; or a line break)?"""
    i = at - 1
    while i >= 0 and (text[i].isspace() or text[i] in _OPENING):
        i -= 1
    return i < 0 or text[i] in ".!?:;" or "\n" in text[i + 1:at]


def _words(text: str) -> list[tuple[str, int]]:
    """(word, offset) pairs; a word with a digit stays whole (``2023-05-01``, ``1,000``, ``7:30``),
    any other is split at . , : / - (``Paris,London``)."""
    out = []
    for m in _WORD.finditer(text):
        if _DIGIT.search(m.group()):
            out.append((m.group(), m.start()))
        else:
            pos = m.start()
            for part in _PART.split(m.group()):
                out.append((part, pos))
                pos += len(part) + 1
    return out


def _norm(word: str) -> str:
    word = _POSSESSIVE.sub("", word.lower())
    return word.replace(",", "") if _DIGIT.search(word) else word


def _is_content(word: str, norm: str, sentence_start: bool) -> bool:
    if _DIGIT.search(norm) or norm in NUMBER_WORDS or norm in DATE_WORDS:
        return True
    if not word[:1].isupper():
        return False
    head = re.split(r"['’]", norm, maxsplit=1)[0]
    if head == "i" or re.search(r"n['’]t$", norm):  # I, I'm, I've, Don't, Can't: never a name
        return False
    # A capitalised function word is a name or a month only inside a sentence ("in May", "met Will").
    return not sentence_start or not ({head, norm} & (STOPWORDS | OPENERS))


def _analyse(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """(content words, every word) of ``text``, both normalised."""
    content, words = set(), set()
    for word, at in _words(text):
        norm = _norm(word)
        if not norm:
            continue
        words.add(norm)
        words.update(p for p in re.split(r"[.,:/'’-]", norm) if p)  # "2023-05-01" also holds "2023"
        if _is_content(word, norm, _sentence_start(text, at)):
            content.add(norm)
    return frozenset(content), frozenset(words)


class Contents(TextMemos):
    """`_analyse` of texts, as one owner (`Resources.texts`) keeps it: a write compares each item
    with its near neighbours, the same stored texts write after write."""

    def __init__(self, texts: TextCaches):
        super().__init__(texts)
        self.analyse = self.memo(_analyse, 1 << 16, "analyse")


def _analyser(texts: TextCaches | None):
    return _analyse if texts is None else texts[Contents].analyse


def content_words(text: str, texts: TextCaches | None = None) -> frozenset[str]:
    """The numbers, dates, names and codes of ``text`` (see the module docstring), normalised
    (``texts``: whose memo keeps the analysis, a manager's `Resources.texts`).

    Example::

        content_words("bob fact number 47: the code word is w47xbob")   # {"47", "w47xbob"}
        content_words("Caroline moved to Paris in May")                 # {"caroline", "paris", "may"}
    """
    return _analyser(texts)(text)[0]


def missing_content(survivor: str, absorbed: str, texts: TextCaches | None = None) -> frozenset[str]:
    """Content words of ``absorbed`` that ``survivor`` does not say (empty: nothing would be lost)."""
    analyse = _analyser(texts)
    return analyse(absorbed)[0] - analyse(survivor)[1]


def may_absorb(survivor: str, absorbed: str, texts: TextCaches | None = None) -> bool:
    """May a near-duplicate ``absorbed`` be folded into ``survivor``? Only when it says nothing
    ``survivor`` does not (every content word of it is a word of ``survivor``)."""
    return not ENABLED or not missing_content(survivor, absorbed, texts)


def same_content(a: str, b: str, texts: TextCaches | None = None) -> bool:
    """Duplicates for a merge that keeps either of them: each may absorb the other."""
    return may_absorb(a, b, texts) and may_absorb(b, a, texts)

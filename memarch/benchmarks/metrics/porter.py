"""The Porter (1980) suffix-stripping stemmer, used by LoCoMo's official F1 (which calls NLTK's
`PorterStemmer`); reimplemented here because NLTK is not a dependency.

Example::

    stem("running"), stem("relational"), stem("ponies")   # ('run', 'relat', 'poni')

The original algorithm with NLTK's departures for short "-ies" words ("dies" -> "die"), "y" after
a consonant only, and the extra "-li" / "logi" step-2 rules; rare words may still stem differently.
"""
from __future__ import annotations

from functools import lru_cache

_VOWELS = frozenset("aeiou")


def _is_consonant(word: str, i: int) -> bool:
    ch = word[i]
    if ch in _VOWELS:
        return False
    if ch == "y":
        return i == 0 or not _is_consonant(word, i - 1)
    return True


def _collapse(pattern: str) -> str:
    out = []
    for ch in pattern:
        if not out or out[-1] != ch:
            out.append(ch)
    return "".join(out)


def _m(stem: str) -> int:
    """m in [C](VC)^m[V]: the number of vowel-consonant sequences."""
    pattern = _collapse("".join("c" if _is_consonant(stem, i) else "v" for i in range(len(stem))))
    return pattern.count("vc")


def _has_vowel(stem: str) -> bool:
    return any(not _is_consonant(stem, i) for i in range(len(stem)))


def _ends_double_consonant(word: str) -> bool:
    return len(word) >= 2 and word[-1] == word[-2] and _is_consonant(word, len(word) - 1)


def _cvc(word: str) -> bool:
    """Ends consonant-vowel-consonant, the last not w, x or y (e.g. -hop, -fil)."""
    if len(word) < 3:
        return False
    return (_is_consonant(word, len(word) - 3) and not _is_consonant(word, len(word) - 2)
            and _is_consonant(word, len(word) - 1) and word[-1] not in "wxy")


def _replace(word: str, rules: list[tuple[str, str]], min_m: int) -> str:
    for suffix, repl in rules:
        if word.endswith(suffix):
            stem = word[: len(word) - len(suffix)]
            return stem + repl if _m(stem) > min_m - 1 else word
    return word


def _step1a(w: str) -> str:
    if w.endswith("sses"):
        return w[:-2]
    if w.endswith("ies"):
        return w[:-3] + ("ie" if len(w) == 4 else "i")  # NLTK: "dies" -> "die"
    if w.endswith("ss"):
        return w
    if w.endswith("s"):
        return w[:-1]
    return w


def _step1b(w: str) -> str:
    if w.endswith("eed"):
        return w[:-1] if _m(w[:-3]) > 0 else w
    for suffix in ("ed", "ing"):
        if w.endswith(suffix) and _has_vowel(w[: -len(suffix)]):
            w = w[: -len(suffix)]
            if w.endswith(("at", "bl", "iz")):
                return w + "e"
            if _ends_double_consonant(w) and w[-1] not in "lsz":
                return w[:-1]
            if _m(w) == 1 and _cvc(w):
                return w + "e"
            return w
    return w


def _step1c(w: str) -> str:
    if w.endswith("y") and len(w) > 2 and _is_consonant(w, len(w) - 2):
        return w[:-1] + "i"  # NLTK: only after a consonant, and not for 2-letter words
    return w


_STEP2 = [("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("izer", "ize"),
          ("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous"),
          ("ization", "ize"), ("ation", "ate"), ("ator", "ate"), ("alism", "al"), ("iveness", "ive"),
          ("fulness", "ful"), ("ousness", "ous"), ("aliti", "al"), ("iviti", "ive"), ("biliti", "ble"),
          ("logi", "log"), ("fulli", "ful"), ("lessli", "less")]
_STEP3 = [("icate", "ic"), ("ative", ""), ("alize", "al"), ("iciti", "ic"), ("ical", "ic"),
          ("ful", ""), ("ness", "")]
_STEP4 = ["al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion",
          "ou", "ism", "ate", "iti", "ous", "ive", "ize"]


# Porter matches the longest suffix; sorting once keeps the scans first-match.
_STEP2.sort(key=lambda r: -len(r[0]))
_STEP3.sort(key=lambda r: -len(r[0]))
_STEP4.sort(key=len, reverse=True)


def _step4(w: str) -> str:
    for suffix in _STEP4:
        if w.endswith(suffix):
            stem = w[: -len(suffix)]
            if suffix == "ion" and not stem.endswith(("s", "t")):
                return w
            return stem if _m(stem) > 1 else w
    return w


def _step5(w: str) -> str:
    if w.endswith("e"):
        stem = w[:-1]
        m = _m(stem)
        if m > 1 or (m == 1 and not _cvc(stem)):
            w = stem
    if w.endswith("ll") and _m(w) > 1:
        w = w[:-1]
    return w


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Porter stem of a lower-case word; words of one or two letters are returned unchanged."""
    if len(word) <= 2:
        return word
    w = _step1a(word)
    w = _step1b(w)
    w = _step1c(w)
    w = _replace(w, _STEP2, 1)
    w = _replace(w, _STEP3, 1)
    w = _step4(w)
    return _step5(w)

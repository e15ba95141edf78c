"""How an agent's action matches a remembered step: word similarity with ``<PLACEHOLDER>`` slots,
actions read as templates (verb, connectives, noun phrases), slot filling, and the evidence that a
remembered observation supports an action."""
from __future__ import annotations

import re
from functools import lru_cache

_WORD = re.compile(r"[a-z0-9]+")
_PLACEHOLDER = re.compile(r"<[A-Z_0-9]+>")


@lru_cache(maxsize=65536)
def _words(text: str) -> tuple[str, ...]:
    return tuple(_WORD.findall(_PLACEHOLDER.sub(" __slot__ ", text.lower()).replace("__slot__", "SLOT").lower()))


@lru_cache(maxsize=262144)
def step_similarity(action: str, step: str) -> float:
    """Word overlap where a ``<PLACEHOLDER>`` slot in ``step`` matches any one word of ``action``.

    1.0 for the same words in any order; the verb (first word) must agree for a high score.
    """
    a, s = _words(action), _words(step)
    if not a or not s:
        return 0.0
    slots = s.count("slot")
    fixed = [w for w in s if w != "slot"]
    rest = list(a)
    hit = 0
    for w in fixed:
        if w in rest:
            rest.remove(w)
            hit += 1
    hit += min(slots, len(rest))
    score = 2 * hit / (len(a) + len(s))
    return score if a[0] == s[0] else 0.5 * score



# -- actions as templates ------------------------------------------------------------------------
# An action or a guide step is read as a verb, connective words and noun phrases:
# "put <OBJECT> in <LOCATION>" -> ("put", [slot OBJECT, "in", slot LOCATION]). A ``<PLACEHOLDER>``
# is a hard slot (any phrase, bound once per guide); a concrete phrase of a step ("put bathrobe in
# wall hook") is a soft slot: the same phrase is a literal match, another phrase of the same shape
# an analogous one (bound consistently, so "take mouthwash" ~ "take key" makes the guide's later
# "put mouthwash in ..." read "put key in ...").
_CONNECTIVES = frozenset({"in", "into", "on", "onto", "to", "from", "with", "at", "using", "for", "about",
                          "inside", "under", "of"})
_DETERMINERS = frozenset({"the", "a", "an", "some"})


@lru_cache(maxsize=65536)
def template(text: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """``(verb, parts)``; a part is ``("w", connective)``, ``("hard", NAME)`` or ``("soft", phrase)``."""
    words = [w for w in re.findall(r"<[A-Za-z_0-9]+>|[A-Za-z0-9'\-]+", text) if w.lower() not in _DETERMINERS]
    if not words:
        return "", ()
    verb, parts, phrase = words[0].lower(), [], []

    def flush() -> None:
        if phrase:
            parts.append(("soft", " ".join(phrase)))
            phrase.clear()

    for w in words[1:]:
        if _PLACEHOLDER.fullmatch(w):
            flush()
            parts.append(("hard", w[1:-1]))
        elif w.lower() in _CONNECTIVES:
            flush()
            parts.append(("w", w.lower()))
        else:
            phrase.append(w.lower())
    flush()
    return verb, tuple(parts)


@lru_cache(maxsize=262144)
def instantiate(action: str, step: str) -> tuple[tuple[str, str, str], ...] | None:
    """How ``action`` fills ``step``: ``((kind, key, value), ...)`` per phrase slot, or None when the
    verb or the shape (connectives, number of phrases) differs."""
    av, ap = template(action)
    sv, sp = template(step)
    if not av or av != sv or len(ap) != len(sp):
        return None
    out = []
    for (ak, aval), (sk, sval) in zip(ap, sp):
        if sk == "w" or ak == "w":
            if sk != ak or sval != aval:
                return None
            continue
        if ak == "hard":
            return None
        out.append((sk, sval, aval))
    return tuple(out)



def phrases(action: str) -> tuple[str, ...]:
    return tuple(v for k, v in template(action)[1] if k != "w")


@lru_cache(maxsize=65536)
def normalise(text: str) -> str:
    """Lower-cased words without determiners, space-padded: "Slice the red apple." -> " slice red apple "."""
    return " " + " ".join(w for w in _WORD.findall(text.lower()) if w not in _DETERMINERS) + " "


@lru_cache(maxsize=65536)
def effect_hit(obs: str, fill: tuple[tuple[str, str, str], ...], seen: tuple[str, ...]) -> bool:
    """The remembered observation ``obs``, with the step's phrases replaced by this action's, shares a
    three-word phrase with ``seen`` that holds a replaced value and another content word; every
    phrase the action changed must take part in such a shared phrase (else "cook X in stove" would
    borrow the evidence of the remembered "cook X in oven")."""
    text = normalise(obs)
    changed = []
    for _kind, key, value in fill:
        if key != value:
            text = text.replace(f" {key} ", f" {value} ")
            changed.append(set(value.split()))
    if not changed:
        return False
    values = set().union(*changed)
    words = text.split()
    covered: set[str] = set()
    for i in range(len(words) - 2):
        tri = words[i:i + 3]
        if not any(w in values for w in tri) or not any(w not in values and w not in _STOP for w in tri):
            continue
        needle = " " + " ".join(tri) + " "
        if any(needle in t for t in seen):
            covered.update(w for w in tri if w in values)
    return bool(covered) and all(c & covered for c in changed)


_STOP = frozenset({"the", "a", "an", "of", "to", "in", "on", "and", "or", "for", "with", "from", "into", "at",
                   "is", "it", "be", "by", "your", "you", "then", "that", "this", "as", "its", "some", "are",
                   "there", "see", "also", "has", "have", "nothing"})

"""What makes two memories the same or contradictory: text signatures, upsert-by-key recency,
and opposite outcomes. Pure functions; the managers decide what to do with the answers."""
from __future__ import annotations

import hashlib
import re

from memarch.pipeline.items import MemoryItem
from memarch.pipeline.text_caches import TextCaches, TextMemos

_SPACE = re.compile(r"\s+")
_PUNCT = re.compile(r"[^\w\s<>]")
OPPOSITE = {("success", "failure"), ("failure", "success")}


def signature(item: MemoryItem, texts: TextCaches | None = None) -> str:
    """Exact-duplicate signature: kind + case-, space- and punctuation-folded text (``texts``:
    whose memo keeps it, the store's `Resources.texts`)."""
    return (_signature if texts is None else texts[Signatures].sign)(item.kind, item.text)


def _signature(kind: str, text: str) -> str:
    folded = _SPACE.sub(" ", _PUNCT.sub(" ", text.lower())).strip()
    return hashlib.sha1(f"{kind}\x1f{folded}".encode("utf-8")).hexdigest()


class Signatures(TextMemos):
    """`signature`s as one owner (`Resources.texts`) keeps them: an item is signed on its write
    and again when the signature index catches up."""

    def __init__(self, texts: TextCaches):
        super().__init__(texts)
        self.sign = self.memo(_signature, 1 << 16, "sign")


def newer_or_equal(new: MemoryItem, old: MemoryItem) -> bool:
    """Does ``new`` win an upsert by key? ISO dates compare lexically; a missing time is older,
    so an undated write never overrides a dated one, and two undated ones go to the latest write."""
    if new.event_time is None:
        return old.event_time is None
    return old.event_time is None or new.event_time >= old.event_time


def same_key(a: MemoryItem, b: MemoryItem) -> bool:
    return a.key is not None and a.key == b.key and a.kind == b.kind


def keys_compatible(a: MemoryItem, b: MemoryItem) -> bool:
    """Two keyed items about different keys (``alice|job`` vs ``bob|job``) are never duplicates."""
    return a.key is None or b.key is None or a.key == b.key


def opposite_outcomes(a: MemoryItem, b: MemoryItem) -> bool:
    return (a.outcome, b.outcome) in OPPOSITE


def describe(item: MemoryItem) -> str:
    """How a memory is shown to an LM judge: text plus the context that decides conflicts."""
    when = item.event_time or "unknown time"
    return f"[{item.kind}; outcome {item.outcome}; {when}] {item.text}"

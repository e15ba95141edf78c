"""What a read returns: scored items, each with a trace of why, packed into a context that
honours ``top_k`` and a context budget in words (`count_words`; LM tokens are another unit)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from memarch.pipeline.episodes import Query
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.text_caches import TextCaches, TextMemos

_WORD = re.compile(r"\S+")
# The default context budget, in words: what the reader gets unless told otherwise (ANCHORS 6).
DEFAULT_CONTEXT_BUDGET = 200
# Items per read when neither the caller nor the architecture's ``retrieve.top_k`` knob says (4, as
# in AutoMem): a program's and a retriever's default, and the least an evaluation reads
# (`memarch.benchmarks.evaluation.settings.default_top_k`: B / 10, at least this).
DEFAULT_TOP_K = 4


def count_words(text: str) -> int:
    """Context budget unit: whitespace-separated words (model-independent, documented in README).
    A packer counts the same candidates read after read: it asks its owner's memo
    (`ContextLines.words`)."""
    return len(_WORD.findall(text))


def truncate_words(text: str, budget: int) -> str:
    words = _WORD.findall(text)
    return text if len(words) <= budget else " ".join(words[:budget])


SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")
LEAD = re.compile(r"^[^:\n]{1,60}:\s")  # "John (16 July 2023): " / "2 August 2023 (...) - John: "
_YEAR = re.compile(r"\b(?:1[6-9]|2[0-9])[0-9]{2}\b")


def dates_itself(item: MemoryItem) -> bool:
    """Whether the item's text opens with a lead (``John (16 July 2023): ``) that carries a year
    and lies within its first sentence, so a line that shows any of the item shows its date."""
    return text_dates_itself(item.text)


def text_dates_itself(text: str) -> bool:
    """`dates_itself` of an item with this text."""
    m = LEAD.match(text)
    if not m or not _YEAR.search(m.group(0)):
        return False
    first = SENTENCE_BREAK.split(text.strip(), maxsplit=1)[0]
    return len(first) >= len(m.group(0).rstrip())


def item_header(item: MemoryItem, compact: bool = False, *,
                dated: Callable[[str], bool] = text_dates_itself) -> str:
    """A context line's header: ``[kind date]``; ``compact``: nothing when the item's text dates
    itself (`dates_itself`; ``dated``: how a text is asked, an owner's memo of it), else ``[date]``
    (nothing for an undated item)."""
    when = f" {item.event_time}" if item.event_time else ""
    if not compact:
        return f"[{item.kind}{when}]"
    if dated(item.text):
        return ""
    return f"[{item.event_time}]" if item.event_time else ""


def format_item(item: MemoryItem, compact: bool = False, *,
                dated: Callable[[str], bool] = text_dates_itself) -> str:
    head = item_header(item, compact, dated=dated)
    return f"{head} {item.text}" if head else item.text


class ContextLines(TextMemos):
    """The words of texts and the context lines of items, as one owner keeps them: a packer counts
    and formats the same candidates read after read.

    Example::

        lines = ContextLines.of(resources.texts)
        lines.words("Ann moved to Lisbon.")                       # 4
        lines.formatted("fact", "2023-05-02", "Ann moved.", False)  # ("[fact 2023-05-02] Ann moved.", 3)
    """

    def __init__(self, texts: TextCaches):
        super().__init__(texts)
        self.words = words = self.memo(count_words, 1 << 16, "words")
        self.dates_itself = dated = self.memo(text_dates_itself, 1 << 16, "dates_itself")

        def formatted(kind: str, event_time: str | None, text: str, compact: bool) -> tuple[str, int]:
            # `format_item`'s line of an item with these fields, and its words: a line is a function of them only.
            line = format_item(MemoryItem(text=text, kind=kind, id="-", event_time=event_time), compact, dated=dated)
            return line, words(line)

        self.formatted = self.memo(formatted, 1 << 16)


@dataclass
class ScoredItem:
    item: MemoryItem
    score: float
    trace: dict[str, Any] = field(default_factory=dict)  # why: component scores, seed, path, ...


class LazyScoredItem(ScoredItem):
    """A `ScoredItem` whose trace is made by ``make(*args)`` the first time it is read: a retriever
    ranks more items than a context keeps, and most traces would never be looked at.

    Example::

        s = LazyScoredItem(item, 0.03, _trace, (item.id, sides, 0.03))
        s.trace   # made now, then kept (and replaceable: ``s.trace = {...}``)
    """

    __slots__ = ()

    def __init__(self, item: MemoryItem, score: float, make: Any, args: tuple = ()):
        self.item, self.score = item, score
        self.__dict__["_lazy"] = (make, args)

    @property
    def trace(self) -> dict[str, Any]:  # type: ignore[override]
        d = self.__dict__
        got = d.get("_trace")
        if got is None:
            make, args = d["_lazy"]
            got = d["_trace"] = make(*args)
        return got

    @trace.setter
    def trace(self, value: dict[str, Any]) -> None:
        self.__dict__["_trace"] = value


@dataclass
class Retrieval:
    """Items in rank order and the context built from them."""

    query: Query
    items: list[ScoredItem] = field(default_factory=list)
    context: str = ""
    trace: dict[str, Any] = field(default_factory=dict)

    def ids(self) -> list[str]:
        return [s.item.id for s in self.items]

    def to_dict(self) -> dict:
        return {
            "query": self.query.text, "context": self.context, "trace": self.trace,
            "items": [{"id": s.item.id, "kind": s.item.kind, "score": s.score, "trace": s.trace,
                       "episode_id": s.item.episode_id, "source_ids": s.item.source_ids}
                      for s in self.items],
        }


def pack(query: Query, ranked: list[ScoredItem], *, top_k: int, context_budget: int | None,
         trace: dict[str, Any] | None = None, compact: bool = False, texts: TextCaches | None = None) -> Retrieval:
    """Keep the best items while they fit ``top_k`` and the context budget.

    An item that does not fit whole is cut to the remaining budget if at least 8 words remain, and
    marked ``truncated`` in its trace; items after the budget is spent are dropped. ``compact``:
    the lines' headers as `item_header` makes them compact. ``texts``: whose memos the lines and
    their words are kept in (the retriever's `Resources.texts`).
    """
    lines_of = texts[ContextLines] if texts is not None else ContextLines.of(None)
    formatted, words = lines_of.formatted, lines_of.words
    kept: list[ScoredItem] = []
    lines: list[str] = []
    used = 0
    for s in ranked:
        if len(kept) >= top_k:
            break
        it = s.item
        try:
            line, n = formatted(it.kind, it.event_time, it.text, compact)
        except TypeError:  # a field that is not hashable: formatted as is
            line = format_item(it, compact, dated=lines_of.dates_itself)
            n = words(line)
        if context_budget is not None and used + n > context_budget:
            left = context_budget - used
            if left >= 8:
                line = truncate_words(line, left)
                s.trace = {**s.trace, "truncated": True}
                kept.append(s)
                lines.append(line)
                used += words(line)
            break
        kept.append(s)
        lines.append(line)
        used += n
    t = dict(trace or {})
    t.update({"top_k": top_k, "context_budget": context_budget, "words_used": used,
              "candidates": len(ranked)})
    return Retrieval(query=query, items=kept, context="\n".join(lines), trace=t)


"""The order of a packed context's lines (``pack_order``): by rank as packed, or by time (the
items' ``event_time``, then rank); the items stay in rank order (`memarch.modules.retrievers._packing`)."""
from __future__ import annotations

from typing import Callable

from memarch.pipeline.retrieval import Retrieval, ScoredItem, format_item, text_dates_itself

ORDERS = ("rank", "time")


def item_lines(packed: Retrieval, compact: bool = False, *,
               dated: Callable[[str], bool] = text_dates_itself) -> list[str]:
    """The lines of a `pack` context, one per item (an item's text may hold newlines): every
    line but the last is its item whole, the last may be cut (``dated``: as `format_item`)."""
    lines, rest = [], packed.context
    for s in packed.items[:-1]:
        line = format_item(s.item, compact, dated=dated)
        assert rest.startswith(line + "\n"), "pack's lines are its items whole but the last"
        lines.append(line)
        rest = rest[len(line) + 1:]
    return [*lines, rest] if packed.items else []


def _time_key(when: str | None) -> tuple:
    """Dated lines first, ISO dates as text, a logical clock ("12") as a number."""
    if not when:
        return (1, 0, 0.0, "")
    try:
        return (0, 0, float(when), "")
    except ValueError:
        return (0, 1, 0.0, str(when))


def reorder_lines(packed: Retrieval, lines: list[str], order: int, line_of: list[int] | None = None) -> Retrieval:
    """``order`` 1: the lines by their items' ``event_time``, then rank; 0: as they are. The items
    stay in rank order (a `Retrieval`'s contract, which the rank metrics read); each item's trace
    says which line of the context is its own (``line``). ``line_of``: each item's line where
    items share lines (default: item i is line i)."""
    if not order:
        return packed
    line_of = list(range(len(packed.items))) if line_of is None else line_of
    first: dict[int, tuple] = {}  # a line's place: its earliest-ranked item's time, then that rank
    for i, s in enumerate(packed.items):
        first.setdefault(line_of[i], (_time_key(s.item.event_time), i))
    idx = sorted(first, key=first.__getitem__)
    at = {line: pos for pos, line in enumerate(idx)}
    items = [ScoredItem(s.item, s.score, {**s.trace, "line": at[line_of[i]]}) for i, s in enumerate(packed.items)]
    return Retrieval(query=packed.query, items=items,
                     context="\n".join(lines[i] for i in idx), trace={**packed.trace, "order": ORDERS[order]})

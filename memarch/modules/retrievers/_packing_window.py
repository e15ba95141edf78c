"""The ``window`` packer (``pack = 2``): the best items as ``items`` keeps them, each kept turn with
its ``pack_window`` neighbouring turns before and after it (same episode, found through the store) on
its line in dialogue order, no turn twice (`memarch.modules.retrievers._packing`)."""
from __future__ import annotations

import re
from typing import Any, Callable

from memarch.modules.retrievers._eligibility import eligible as is_eligible
from memarch.modules.retrievers._line_order import reorder_lines
from memarch.modules.stores import VersionedCache
from memarch.pipeline.episodes import Query
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.retrieval import ContextLines, Retrieval, ScoredItem, format_item, item_header, truncate_words
from memarch.pipeline.text_caches import TextCaches

_NUMBER = re.compile(r"\d+")
_MIN_CUT = 8  # words: an item that does not fit whole is cut only if this many remain (as `pack`)


def is_turn(item: MemoryItem) -> bool:
    return item.fields.get("unit") == "turn"


def _turn_key(item: MemoryItem) -> Any:
    """One dialogue turn, whichever item shows it."""
    return (item.episode_id, item.source_ids[0]) if is_turn(item) and item.source_ids else item.id


def _turn_order(item: MemoryItem) -> tuple:
    """Dialogue order from the source id ("D3:7": session 3, turn 7); unnumbered turns last."""
    numbers = tuple(int(n) for n in _NUMBER.findall(item.source_ids[0])) if item.source_ids else ()
    return (0, numbers) if numbers else (1, ())


class TurnIndex:
    """A namespace's active turn items, per episode in dialogue order (ties in store order)."""

    def __init__(self, items: list[MemoryItem]):
        by_episode: dict[str, list[tuple[tuple, int, MemoryItem]]] = {}
        for j, it in enumerate(items):
            if is_turn(it) and it.active and it.episode_id is not None:
                by_episode.setdefault(it.episode_id, []).append((_turn_order(it), j, it))
        self.episodes = {ep: [it for _, _, it in sorted(rows, key=lambda r: r[:2])] for ep, rows in by_episode.items()}
        self.where = {it.id: (ep, p) for ep, turns in self.episodes.items() for p, it in enumerate(turns)}

    def neighbours(self, item: MemoryItem, n: int) -> list[tuple[int, MemoryItem]]:
        """(offset, turn) of the ``n`` active turns before and after ``item`` (a deleted turn's
        place goes to the next one), nearest first, the one after before the one before at the
        same distance (a question's reply follows it)."""
        if item.id not in self.where:
            return []
        ep, p = self.where[item.id]
        turns = self.episodes[ep]
        return [(d, turns[p + d]) for k in range(1, n + 1) for d in (k, -k) if 0 <= p + d < len(turns)]


_TURN_INDEXES = VersionedCache()  # per namespace, in the store's own caches


def turn_index(store: Any, namespace: str) -> TurnIndex:
    """The turn index of ``store``'s ``namespace``, built once per ``store.version(namespace)``."""
    return _TURN_INDEXES.get(store, namespace, lambda: TurnIndex(store.list(namespace)))


def pack_window(query: Query, ranked: list[ScoredItem], *, top_k: int, context_budget: int | None,
                store: Any = None, window: int = 1, order: int = 0,
                eligible: Callable[[MemoryItem], bool] | None = None, compact: bool = False,
                trace: dict[str, Any] | None = None, texts: TextCaches | None = None) -> Retrieval:
    """The best items as `pack` keeps them, each turn item with up to ``window`` neighbouring
    turns before and after it on its line, in dialogue order.

    A neighbour is an active turn of the hit's episode in the store, readable by ``query``
    (``eligible``, default the retrievers' `eligible`), not already on the context and not one of the ``top_k``
    hits (shown on its own line). A window that does not fit shrinks: the farthest turns go first
    and, of two at one distance, the one before; a hit that does not fit alone is cut as `pack`
    cuts its last item. Without ``store``, the items as `pack` keeps them. ``texts``: whose memos
    keep the words and headers of the lines (the retriever's `Resources.texts`).

    Example::

        r = pack_window(Query("Where did Ann go?"), ranked, top_k=4, context_budget=200, store=store)
        r.items[0].trace["window"]          # ids of the turns added around the first item
    """
    ok = eligible or (lambda it: is_eligible(it, query))
    index = turn_index(store, query.namespace) if store is not None else None
    hits = {_turn_key(s.item) for s in ranked[:top_k]}
    context = _WindowContext(ContextLines.of(texts))
    for s in ranked:
        if len(context.kept) >= top_k:
            break
        cands = [(d, it) for d, it in _neighbour_turns(s.item, index, window)
                 if ok(it) and _turn_key(it) not in context.shown and _turn_key(it) not in hits]
        fit = _widest_window(s.item, cands, context.used, context_budget, compact, context.memo)
        if fit is None:  # not even the hit alone fits: cut it, as `pack` does
            context.cut(s, context_budget - context.used, compact)
            break
        context.add(s, *fit)
    t = dict(trace or {})
    t.update({"packer": "window", "top_k": top_k, "context_budget": context_budget, "words_used": context.used,
              "candidates": len(ranked), "window": int(window), "neighbours": context.added})
    return reorder_lines(Retrieval(query=query, items=context.kept, context="\n".join(context.lines), trace=t),
                    context.lines, order)


class _WindowContext:
    """A window context so far: the hits kept (in rank order) and their lines, the turns shown."""

    def __init__(self, memo: ContextLines) -> None:
        self.memo = memo
        self.kept: list[ScoredItem] = []
        self.lines: list[str] = []
        self.shown: set[Any] = set()  # `_turn_key` of every turn on the context
        self.used = self.added = 0  # words; neighbouring turns added

    def add(self, hit: ScoredItem, members: list[tuple[int, MemoryItem]], line: str, cost: int) -> None:
        """Keep ``hit`` on ``line`` with its window (``members``: the hit and its neighbours)."""
        neighbours = [it for _, it in members if it is not hit.item]
        self.shown.update(_turn_key(it) for _, it in members)
        self.kept.append(ScoredItem(hit.item, hit.score, {**hit.trace, "window": [it.id for it in neighbours]}))
        self.lines.append(line)
        self.used += cost
        self.added += len(neighbours)

    def cut(self, hit: ScoredItem, left: int, compact: bool) -> None:
        """Keep ``hit`` alone, cut to the ``left`` words of the budget, if at least `_MIN_CUT` are left."""
        if left < _MIN_CUT:
            return
        line = truncate_words(format_item(hit.item, compact, dated=self.memo.dates_itself), left)
        self.kept.append(ScoredItem(hit.item, hit.score, {**hit.trace, "window": [], "truncated": True}))
        self.lines.append(line)
        self.used += self.memo.words(line)


def _neighbour_turns(hit: MemoryItem, index: TurnIndex | None, window: int) -> list[tuple[int, MemoryItem]]:
    """(offset, turn) of the turns around a turn hit, nearest first (none around other items)."""
    if index is None or not is_turn(hit):
        return []
    return index.neighbours(hit, max(int(window), 0))


def _widest_window(hit: MemoryItem, cands: list[tuple[int, MemoryItem]], used: int, context_budget: int | None,
                   compact: bool, memo: ContextLines) -> tuple[list[tuple[int, MemoryItem]], str, int] | None:
    """The hit with as many of its nearest ``cands`` as fit in what is left of the budget: its
    members in dialogue order (offset, turn), its line and the line's words; None when not even
    the hit alone fits."""
    for n in range(len(cands), -1, -1):
        members = sorted([(0, hit), *cands[:n]], key=lambda m: m[0])
        line = _window_line(hit, members, compact, memo.dates_itself) if n else \
            format_item(hit, compact, dated=memo.dates_itself)
        cost = memo.words(line)
        if context_budget is None or used + cost <= context_budget:
            return members, line, cost
    return None


def _window_line(hit: MemoryItem, members: list[tuple[int, MemoryItem]], compact: bool,
                 dated: Callable[[str], bool]) -> str:
    """A hit's line with its neighbouring turns: the hit's header, then every member's text."""
    head = item_header(hit, compact, dated=dated)
    return " ".join([*([head] if head else []), *(it.text for _, it in members)])

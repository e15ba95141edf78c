"""Context packing: how a retriever's ranked items become the B-word context the reader gets.

``pack = 0`` (``items``, every preset's packing): the best items whole, in rank order, the last one
cut. ``pack = 1`` (``sentences``): the retriever ranks ``pack_pool`` x top_k items; each item is
split into sentences, each sentence scored by its dense cosine to the query, its idf-weighted
lexical overlap and its item's rank, and the best sentences are kept while they fit B words — each
item's kept sentences on one line under the item's header (kind and date) and, when its first
sentence is not kept, its speaker/date lead (``John (16 July 2023):``), items in rank order.
``pack = 2`` (``window``): the best items as ``items`` keeps them, each kept turn with its
``pack_window`` neighbouring turns before and after (same episode, found through the store) on its
line in dialogue order, no turn twice; a window that does not fit shrinks, nearest turns kept.
``pack_order`` orders any packer's lines: 0 by rank, 1 by time (``event_time``, then rank); the
items stay in rank order, each naming its line (``trace["line"]``). ``pack_compact`` 1 packs tighter:
any packer's line headers are shortened (none where the item's text opens with a dated lead, a
turn's ``John (16 July 2023):``; else the date alone, ``[2023-07-16]`` for ``[fact 2023-07-16]``), so
no line loses its date; ``sentences`` also skips a sentence already kept under the same date (an
event restating its turn) and puts items with the same dated lead on one line, the lead once.

Packing is a set of knobs of every retriever, not a fifth role: it changes no memory, only how the
retriever's output is cut, and a role would multiply the categorical space (and every landscape
and count built on it) by the number of packers. Measured on LoCoMo (docs/retrievers.md).
"""
from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any, Callable

import numpy as np

from memarch.modules.retrievers._eligibility import eligible as is_eligible
from memarch.modules.stores._versioned import VersionedCache
from memarch.modules.stores.lexical import tokenize
from memarch.pipeline.episodes import Query
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.knobs import Knob
from memarch.pipeline.retrieval import (LEAD, SENTENCE_BREAK, Retrieval, ScoredItem, count_tokens, dates_itself,
                                        format_item, item_header, pack, truncate_tokens)

PACKERS = ("items", "sentences", "window")
ORDERS = ("rank", "time")
PACKING = (
    Knob("pack", "int", 0, 2, default=0,
         description="pack: how ranked items become the context (0 items whole, 1 best sentences, "
                     "2 items with their neighbouring turns)", group="pack"),
    Knob("pack_pool", "int", 1, 4, default=2,
         description="pack sentences: items ranked per context, as a multiple of top_k", group="pack"),
    Knob("pack_rank_weight", "float", 0.0, 6.0, default=3.0,
         description="pack sentences: weight of the item's rank, 1/(1+rank)", group="pack"),
    Knob("pack_dense_weight", "float", 0.0, 6.0, default=3.0,
         description="pack sentences: weight of the sentence's dense cosine to the query", group="pack"),
    Knob("pack_lexical_weight", "float", 0.0, 2.0, default=0.5,
         description="pack sentences: weight of the idf-weighted query-term overlap", group="pack"),
    Knob("pack_window", "int", 1, 3, default=1,
         description="pack window: neighbouring turns of each kept turn added before and after it", group="pack"),
    Knob("pack_compact", "int", 0, 1, default=0,
         description="pack: compact lines (1: a header only where the text does not date itself; "
                     "sentences: no sentence twice under one date, one line per dated lead)", group="pack"),
    Knob("pack_order", "int", 0, 1, default=0,
         description="pack: order of the context's lines (0 rank, 1 time: by date, then rank)", group="pack"),
)
_NUMBER = re.compile(r"\d+")
_MIN_CUT = 8  # words: an item that does not fit whole is cut only if this many remain (as `pack`)


def packer_name(config: dict[str, Any]) -> str:
    return PACKERS[int(config.get("pack", 0) or 0)]


def pool_size(config: dict[str, Any], top_k: int) -> int:
    """Items the retriever ranks for one context."""
    return max(top_k, 1) * (int(config.get("pack_pool", 2)) if packer_name(config) == "sentences" else 1)


def pack_context(query: Query, ranked: list[ScoredItem], *, top_k: int, budget_tokens: int | None,
                 config: dict[str, Any], embedder: Any, trace: dict[str, Any], store: Any = None) -> Retrieval:
    """The context of ``ranked`` under the configured packer (``store``: where a packer may look
    up more of the memory, e.g. an item's neighbouring turns)."""
    name, order = packer_name(config), int(config.get("pack_order", 0) or 0)
    compact = bool(int(config.get("pack_compact", 0) or 0))
    if name == "items":
        packed = pack(query, ranked, top_k=top_k, budget_tokens=budget_tokens, trace=trace, compact=compact)
        return _reorder(packed, _item_lines(packed, compact), order) if order else packed
    if name == "window":
        return pack_window(query, ranked, top_k=top_k, budget_tokens=budget_tokens, store=store,
                           window=int(config.get("pack_window", 1)), order=order, compact=compact, trace=trace)
    return pack_sentences(query, ranked[:pool_size(config, top_k)], budget_tokens=budget_tokens, embedder=embedder,
                          rank_weight=float(config.get("pack_rank_weight", 3.0)),
                          dense_weight=float(config.get("pack_dense_weight", 3.0)),
                          lexical_weight=float(config.get("pack_lexical_weight", 0.5)), order=order,
                          compact=compact, trace=trace)


def split_sentences(text: str) -> list[str]:
    return [s for s in (p.strip() for p in SENTENCE_BREAK.split(text)) if s]


def pack_sentences(query: Query, ranked: list[ScoredItem], *, budget_tokens: int | None, embedder: Any = None,
                   rank_weight: float = 3.0, dense_weight: float = 3.0, lexical_weight: float = 0.5,
                   order: int = 0, compact: bool = False, trace: dict[str, Any] | None = None) -> Retrieval:
    """Keep the best sentences of ``ranked`` within ``budget_tokens`` words, headers included.

    ``compact``: headers as `item_header` shortens them; a sentence already kept under the same
    date (an event restating its turn) is skipped; items whose text opens with the same dated lead
    (``Ann (2 May 2023):``) share one line and the lead is shown once.

    Example::

        r = pack_sentences(Query("when did Ann move?"), ranked, budget_tokens=200, embedder=embedder)
        r.items[0].trace["sentences"]       # indices of the item's sentences in the context
    """
    split = [split_sentences(scored.item.text) for scored in ranked]
    cands = [(r, j, s) for r, sentences in enumerate(split) for j, s in enumerate(sentences)]
    q_terms = set(tokenize(query.text))
    terms = [set(tokenize(s)) for _, _, s in cands]
    df = Counter(w for ws in terms for w in ws)
    n = max(len(cands), 1)
    dense = np.zeros(len(cands))
    if dense_weight and embedder is not None and cands:
        vectors = np.asarray(embedder.embed([s for _, _, s in cands]), dtype=float)
        qv = np.asarray(embedder.embed_one(query.text), dtype=float)
        norms = np.linalg.norm(vectors, axis=1) * (np.linalg.norm(qv) or 1.0)
        dense = vectors @ qv / np.where(norms > 0, norms, 1.0)
    scores = []
    for i, ((r, _, _), ws) in enumerate(zip(cands, terms)):
        lexical = sum(math.log(1 + n / df[w]) for w in ws & q_terms) / (1 + math.log(1 + len(ws)))
        scores.append(lexical_weight * lexical + rank_weight / (1 + r) + dense_weight * float(dense[i]))
    leads = [_lead(scored.item.text) for scored in ranked]
    # compact: the dated lead an item shares with others on one line (None: the item has its own line)
    shared = [leads[r].strip() if compact and dates_itself(scored.item) else None for r, scored in enumerate(ranked)]
    chosen: dict[int, list[int]] = {}
    shown: set[tuple[str, Any]] = set()
    paid: set[str] = set()  # compact: shared leads already on the context
    used = skipped = 0
    for i in sorted(range(len(cands)), key=lambda i: (-scores[i], i)):
        r, j, sentence = cands[i]
        item, lead = ranked[r].item, leads[r]
        if compact:  # a sentence already shown under the same date says nothing new
            said = (_body(_strip_lead(sentence, lead) if j == 0 else sentence), item.event_time)
            if said in shown:
                skipped += 1
                continue
        if shared[r] is not None:  # its words without the lead; the lead once per line
            cost = count_tokens(sentence) - (count_tokens(lead) if j == 0 else 0)
            cost += count_tokens(lead) if shared[r] not in paid else 0
        else:
            cost = count_tokens(sentence)
            if r not in chosen:  # the first sentence of an item brings its header (and lead, if not itself)
                cost += count_tokens(item_header(item, compact)) + (count_tokens(lead) if j > 0 else 0)
            elif 0 not in chosen[r] and j == 0:
                cost -= count_tokens(lead)  # the lead is now part of the kept first sentence
        if budget_tokens is not None and used + cost > budget_tokens:
            continue
        chosen.setdefault(r, []).append(j)
        used += cost
        if compact:
            shown.add(said)
        if shared[r] is not None:
            paid.add(shared[r])
    items, lines, line_of = [], [], []
    at_line: dict[str, int] = {}
    for r in sorted(chosen):
        scored, kept, sentences = ranked[r], sorted(chosen[r]), split[r]
        if shared[r] is not None:
            bodies = [_strip_lead(sentences[j], leads[r]) if j == 0 else sentences[j] for j in kept]
            if shared[r] in at_line:
                line_of.append(at_line[shared[r]])
                lines[line_of[-1]] = " ".join([lines[line_of[-1]], *bodies])
            else:
                at_line[shared[r]] = len(lines)
                line_of.append(len(lines))
                lines.append(" ".join([shared[r], *bodies]))
        else:
            lead = leads[r] if kept[0] > 0 else ""
            head = item_header(scored.item, compact)
            line_of.append(len(lines))
            lines.append(" ".join([*([head] if head else []), *([lead.strip()] if lead else []),
                                   *(sentences[j] for j in kept)]))
        partial = len(kept) < len(sentences)
        items.append(ScoredItem(scored.item, scored.score,
                                {**scored.trace, "sentences": kept, **({"truncated": True} if partial else {}),
                                 **({"line": line_of[-1]} if compact else {})}))
    t = dict(trace or {})
    t.update({"packer": "sentences", "budget_tokens": budget_tokens, "tokens_used": used, "candidates": len(ranked),
              "sentences_scored": len(cands),
              **({"repeats_skipped": skipped, "lines": len(lines)} if compact else {})})
    return _reorder(Retrieval(query=query, items=items, context="\n".join(lines), trace=t), lines, order, line_of)


def _strip_lead(sentence: str, lead: str) -> str:
    """A first sentence without the item's lead (``Ann (2 May 2023): ``)."""
    return sentence[len(lead):].strip() if lead and sentence.startswith(lead.strip()) else sentence


def _body(sentence: str) -> str:
    return " ".join(tokenize(sentence))


def _lead(text: str) -> str:
    m = LEAD.match(text)
    return m.group(0) if m else ""


# -- window: each kept turn with its neighbouring turns -------------------------------------------

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


_TURN_INDEXES = VersionedCache()  # per store object and namespace; dies with the store


def turn_index(store: Any, namespace: str) -> TurnIndex:
    """The turn index of ``store``'s ``namespace``, built once per ``store.version(namespace)``."""
    return _TURN_INDEXES.get(store, namespace, lambda: TurnIndex(store.list(namespace)))


def pack_window(query: Query, ranked: list[ScoredItem], *, top_k: int, budget_tokens: int | None,
                store: Any = None, window: int = 1, order: int = 0,
                eligible: Callable[[MemoryItem], bool] | None = None, compact: bool = False,
                trace: dict[str, Any] | None = None) -> Retrieval:
    """The best items as `pack` keeps them, each turn item with up to ``window`` neighbouring
    turns before and after it on its line, in dialogue order.

    A neighbour is an active turn of the hit's episode in the store, readable by ``query``
    (``eligible``, default the retrievers' `eligible`), not already on the context and not one of the ``top_k``
    hits (shown on its own line). A window that does not fit shrinks: the farthest turns go first
    and, of two at one distance, the one before; a hit that does not fit alone is cut as `pack`
    cuts its last item. Without ``store``, the items as `pack` keeps them.

    Example::

        r = pack_window(Query("Where did Ann go?"), ranked, top_k=4, budget_tokens=200, store=store)
        r.items[0].trace["window"]          # ids of the turns added around the first item
    """
    ok = eligible or (lambda it: is_eligible(it, query))
    index = turn_index(store, query.namespace) if store is not None else None
    hits = {_turn_key(s.item) for s in ranked[:top_k]}
    shown: set[Any] = set()
    kept: list[ScoredItem] = []
    lines: list[str] = []
    used = added = 0
    for s in ranked:
        if len(kept) >= top_k:
            break
        cands = [] if index is None or not is_turn(s.item) else [
            (d, it) for d, it in index.neighbours(s.item, max(int(window), 0))
            if ok(it) and _turn_key(it) not in shown and _turn_key(it) not in hits]
        for n in range(len(cands), -1, -1):
            members = sorted([(0, s.item), *cands[:n]], key=lambda m: m[0])
            head = item_header(s.item, compact)
            line = (format_item(s.item, compact) if n == 0
                    else " ".join([*([head] if head else []), *(it.text for _, it in members)]))
            cost = count_tokens(line)
            if budget_tokens is None or used + cost <= budget_tokens:
                break
        else:  # not even the hit alone fits: cut it, as `pack` does
            left = budget_tokens - used
            if left >= _MIN_CUT:
                line = truncate_tokens(format_item(s.item, compact), left)
                kept.append(ScoredItem(s.item, s.score, {**s.trace, "window": [], "truncated": True}))
                lines.append(line)
                used += count_tokens(line)
            break
        neighbours = [it for _, it in members if it is not s.item]
        shown.update(_turn_key(it) for _, it in members)
        kept.append(ScoredItem(s.item, s.score, {**s.trace, "window": [it.id for it in neighbours]}))
        lines.append(line)
        used += cost
        added += len(neighbours)
    t = dict(trace or {})
    t.update({"packer": "window", "top_k": top_k, "budget_tokens": budget_tokens, "tokens_used": used,
              "candidates": len(ranked), "window": int(window), "neighbours": added})
    return _reorder(Retrieval(query=query, items=kept, context="\n".join(lines), trace=t), lines, order)


# -- order of the lines ---------------------------------------------------------------------------

def _item_lines(packed: Retrieval, compact: bool = False) -> list[str]:
    """The lines of a `pack` context, one per item (an item's text may hold newlines): every
    line but the last is its item whole, the last may be cut."""
    lines, rest = [], packed.context
    for s in packed.items[:-1]:
        line = format_item(s.item, compact)
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


def _reorder(packed: Retrieval, lines: list[str], order: int, line_of: list[int] | None = None) -> Retrieval:
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

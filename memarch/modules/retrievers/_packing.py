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
from typing import Any

import numpy as np

from memarch.modules.retrievers._line_order import item_lines, reorder_lines
from memarch.modules.retrievers._packing_window import pack_window
from memarch.modules.retrievers._sentences import Sentences
from memarch.pipeline.episodes import Query
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.knobs import Knob
from memarch.pipeline.retrieval import ContextLines, Retrieval, ScoredItem, item_header, pack
from memarch.pipeline.text_caches import TextCaches

PACKERS = ("items", "sentences", "window")
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


def packer_name(config: dict[str, Any]) -> str:
    return PACKERS[int(config.get("pack", 0) or 0)]


def pool_size(config: dict[str, Any], top_k: int) -> int:
    """Items the retriever ranks for one context."""
    return max(top_k, 1) * (int(config.get("pack_pool", 2)) if packer_name(config) == "sentences" else 1)


def pack_context(query: Query, ranked: list[ScoredItem], *, top_k: int, context_budget: int | None,
                 config: dict[str, Any], embedder: Any, trace: dict[str, Any], store: Any = None,
                 texts: TextCaches | None = None) -> Retrieval:
    """The context of ``ranked`` under the configured packer (``store``: where a packer may look
    up more of the memory, e.g. an item's neighbouring turns; ``texts``: whose memos keep the
    lines, words and sentences, the retriever's `Resources.texts`)."""
    name, order = packer_name(config), int(config.get("pack_order", 0) or 0)
    compact = bool(int(config.get("pack_compact", 0) or 0))
    if name == "items":
        packed = pack(query, ranked, top_k=top_k, context_budget=context_budget, trace=trace, compact=compact,
                      texts=texts)
        if not order:
            return packed
        return reorder_lines(packed, item_lines(packed, compact, dated=ContextLines.of(texts).dates_itself), order)
    if name == "window":
        return pack_window(query, ranked, top_k=top_k, context_budget=context_budget, store=store,
                           window=int(config.get("pack_window", 1)), order=order, compact=compact, trace=trace,
                           texts=texts)
    return pack_sentences(query, ranked[:pool_size(config, top_k)], context_budget=context_budget, embedder=embedder,
                          rank_weight=float(config.get("pack_rank_weight", 3.0)),
                          dense_weight=float(config.get("pack_dense_weight", 3.0)),
                          lexical_weight=float(config.get("pack_lexical_weight", 0.5)), order=order,
                          compact=compact, trace=trace, texts=texts)


def pack_sentences(query: Query, ranked: list[ScoredItem], *, context_budget: int | None, embedder: Any = None,
                   rank_weight: float = 3.0, dense_weight: float = 3.0, lexical_weight: float = 0.5,
                   order: int = 0, compact: bool = False, trace: dict[str, Any] | None = None,
                   texts: TextCaches | None = None) -> Retrieval:
    """Keep the best sentences of ``ranked`` within ``context_budget`` words, headers included.

    ``compact``: headers as `item_header` shortens them; a sentence already kept under the same
    date (an event restating its turn) is skipped; items whose text opens with the same dated lead
    (``Ann (2 May 2023):``) share one line and the lead is shown once.

    Example::

        r = pack_sentences(Query("when did Ann move?"), ranked, context_budget=200, embedder=embedder)
        r.items[0].trace["sentences"]       # indices of the item's sentences in the context
    """
    memo = Sentences.of(texts)
    sentences_of = memo.sentences
    split = [sentences_of(scored.item.text) for scored in ranked]
    cands = [(r, j, s) for r, sentences in enumerate(split) for j, s in enumerate(sentences)]
    scores = _sentence_scores(query, cands, embedder, memo, items=[scored.item.text for scored in ranked],
                              rank_weight=rank_weight, dense_weight=dense_weight, lexical_weight=lexical_weight)
    choice = _SentenceChoice(ranked, context_budget, compact, memo)
    for i in sorted(range(len(cands)), key=lambda i: (-scores[i], i)):
        choice.offer(*cands[i])
    items, lines, line_of = _sentence_lines(ranked, split, choice)
    t = dict(trace or {})
    t.update({"packer": "sentences", "context_budget": context_budget, "words_used": choice.used,
              "candidates": len(ranked), "sentences_scored": len(cands),
              **({"repeats_skipped": choice.skipped, "lines": len(lines)} if compact else {})})
    return reorder_lines(Retrieval(query=query, items=items, context="\n".join(lines), trace=t), lines, order, line_of)


def _sentence_scores(query: Query, cands: list[tuple[int, int, str]], embedder: Any, memo: Sentences, *,
                     items: list[str], rank_weight: float, dense_weight: float, lexical_weight: float) -> list[float]:
    """Each candidate sentence's score: its lexical overlap with the query, its item's rank
    (``cands`` holds (item rank, sentence index, sentence): every sentence of ``items``, the ranked
    items' texts, in order) and its dense cosine to the query."""
    texts = [s for _, _, s in cands]
    lexical = _lexical_overlaps(query, texts, memo)
    dense = _dense_cosines(query, items, embedder, memo) if dense_weight else np.zeros(len(cands))
    return [lexical_weight * lexical[i] + rank_weight / (1 + r) + dense_weight * float(dense[i])
            for i, (r, _, _) in enumerate(cands)]


def _lexical_overlaps(query: Query, texts: list[str], memo: Sentences) -> list[float]:
    """The idf-weighted overlap of each text's terms with the query's (idf over ``texts``),
    damped by the text's length."""
    q_terms = set(memo.terms(query.text))
    term_set = memo.term_set
    terms = [term_set(s) for s in texts]
    df = {w: sum(1 for ws in terms if w in ws) for w in q_terms}  # only the query's terms are ever looked up
    n = max(len(texts), 1)
    return [sum(math.log(1 + n / df[w]) for w in ws & q_terms) / (1 + math.log(1 + len(ws))) for ws in terms]


def _dense_cosines(query: Query, items: list[str], embedder: Any, memo: Sentences | None = None) -> np.ndarray:
    """The cosine to the query of each sentence of ``items`` (texts), item by item (zeros without an
    embedder); ``memo``: whose sentences and their vectors are kept (none: kept by nobody)."""
    memo = memo if memo is not None else Sentences.of(None)
    if embedder is None or not items:
        return np.zeros(sum(len(memo.sentences(t)) for t in items))
    vectors, norms = memo.sentence_rows(items, embedder)
    qv = np.asarray(embedder.embed_one(query.text), dtype=float)
    norms = norms * (np.linalg.norm(qv) or 1.0)
    return vectors @ qv / np.where(norms > 0, norms, 1.0)


class _SentenceChoice:
    """The sentences kept so far, best first, and the words they cost: a sentence costs its words
    plus what its line needs that is not on the context yet (the item's header, its lead)."""

    def __init__(self, ranked: list[ScoredItem], context_budget: int | None, compact: bool, memo: Sentences):
        self.ranked, self.context_budget, self.compact = ranked, context_budget, compact
        self.memo, self.words, self.dated = memo, memo.lines.words, memo.lines.dates_itself
        self.leads = [memo.lead(scored.item.text) for scored in ranked]
        # compact: the dated lead an item shares with others on one line (None: the item has its own line)
        self.shared = [self.leads[r].strip() if compact and self.dated(scored.item.text) else None
                       for r, scored in enumerate(ranked)]
        self.chosen: dict[int, list[int]] = {}  # item rank -> indices of its kept sentences
        self.shown: set[tuple[str, Any]] = set()  # compact: (words, date) of the kept sentences
        self.paid: set[str] = set()  # compact: shared leads already on the context
        self.used = self.skipped = 0

    def offer(self, r: int, j: int, sentence: str) -> None:
        """Keep sentence ``j`` of item ``r`` if it says something new (compact) and fits."""
        said = self._said(r, j, sentence) if self.compact else None
        if self.compact and said in self.shown:  # a sentence already shown under the same date says nothing new
            self.skipped += 1
            return
        shared = self.shared[r] is not None
        cost = self._shared_line_cost(r, j, sentence) if shared else self._own_line_cost(r, j, sentence)
        if self.context_budget is not None and self.used + cost > self.context_budget:
            return
        self.chosen.setdefault(r, []).append(j)
        self.used += cost
        if self.compact:
            self.shown.add(said)
        if shared:
            self.paid.add(self.shared[r])

    def _said(self, r: int, j: int, sentence: str) -> tuple[str, Any]:
        """What a sentence says, and when: its words without the item's lead, and the item's date."""
        body = self.memo.body(_strip_lead(sentence, self.leads[r]) if j == 0 else sentence)
        return body, self.ranked[r].item.event_time

    def _shared_line_cost(self, r: int, j: int, sentence: str) -> int:
        """On a shared line: the sentence's words without the lead; the lead once per line."""
        lead, words = self.leads[r], self.words
        cost = words(sentence) - (words(lead) if j == 0 else 0)
        return cost + (words(lead) if self.shared[r] not in self.paid else 0)

    def _own_line_cost(self, r: int, j: int, sentence: str) -> int:
        """On the item's own line: the first sentence kept brings the header (and the lead, unless
        it is that sentence); the first sentence kept later takes over the lead already paid."""
        words = self.words
        lead, cost = self.leads[r], words(sentence)
        if r not in self.chosen:
            return cost + words(item_header(self.ranked[r].item, self.compact, dated=self.dated)) + (
                words(lead) if j > 0 else 0)
        if 0 not in self.chosen[r] and j == 0:
            return cost - words(lead)
        return cost


def _sentence_lines(ranked: list[ScoredItem], split: list[list[str]], choice: _SentenceChoice
                    ) -> tuple[list[ScoredItem], list[str], list[int]]:
    """The kept items in rank order (each with its kept sentences in ``trace``), the context's
    lines and each item's line: an item's own line, or the line of its shared lead."""
    items: list[ScoredItem] = []
    lines: list[str] = []
    line_of: list[int] = []
    at_line: dict[str, int] = {}  # shared lead -> its line
    for r in sorted(choice.chosen):
        scored, kept, sentences, shared = ranked[r], sorted(choice.chosen[r]), split[r], choice.shared[r]
        if shared is None:
            line_of.append(len(lines))
            lines.append(_own_line(scored.item, [sentences[j] for j in kept], choice.leads[r] if kept[0] > 0 else "",
                                   choice.compact, choice.dated))
        elif shared in at_line:
            line_of.append(at_line[shared])
            lines[line_of[-1]] = " ".join([lines[line_of[-1]], *_bodies(sentences, kept, choice.leads[r])])
        else:
            at_line[shared] = len(lines)
            line_of.append(len(lines))
            lines.append(" ".join([shared, *_bodies(sentences, kept, choice.leads[r])]))
        partial = len(kept) < len(sentences)
        items.append(ScoredItem(scored.item, scored.score,
                                {**scored.trace, "sentences": kept, **({"truncated": True} if partial else {}),
                                 **({"line": line_of[-1]} if choice.compact else {})}))
    return items, lines, line_of


def _own_line(item: MemoryItem, kept: list[str], lead: str, compact: bool, dated: Any) -> str:
    """An item's line: its header, its lead (``lead``: when its first sentence is not kept), its
    kept sentences."""
    head = item_header(item, compact, dated=dated)
    return " ".join([*([head] if head else []), *([lead.strip()] if lead else []), *kept])


def _bodies(sentences: list[str], kept: list[int], lead: str) -> list[str]:
    """The kept sentences as a shared line shows them: the first without the lead."""
    return [_strip_lead(sentences[j], lead) if j == 0 else sentences[j] for j in kept]


def _strip_lead(sentence: str, lead: str) -> str:
    """A first sentence without the item's lead (``Ann (2 May 2023): ``)."""
    return sentence[len(lead):].strip() if lead and sentence.startswith(lead.strip()) else sentence

"""Context packing: how a retriever's ranked items become the B-word context the reader gets.

``pack = 0`` (``items``, every preset's packing): the best items whole, in rank order, the last one
cut. ``pack = 1`` (``sentences``): the retriever ranks ``pack_pool`` x top_k items; each item is
split into sentences, each sentence scored by its dense cosine to the query, its idf-weighted
lexical overlap and its item's rank, and the best sentences are kept while they fit B words — each
item's kept sentences on one line under the item's header (kind and date) and, when its first
sentence is not kept, its speaker/date lead (``John (16 July 2023):``), items in rank order.

Packing is a set of knobs of every retriever, not a fifth role: it changes no memory, only how the
retriever's output is cut, and a role would multiply the categorical space (and every landscape
and count built on it) by the number of packers. Measured on LoCoMo (docs/retrievers.md).
"""
from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

import numpy as np

from memarch.modules.stores.lexical import tokenize
from memarch.pipeline.episodes import Query
from memarch.pipeline.knobs import Knob
from memarch.pipeline.retrieval import Retrieval, ScoredItem, count_tokens, pack

PACKERS = ("items", "sentences")
PACKING = (
    Knob("pack", "int", 0, 1, default=0,
         description="pack: how ranked items become the context (0 items whole, 1 best sentences)"),
    Knob("pack_pool", "int", 1, 4, default=2,
         description="pack sentences: items ranked per context, as a multiple of top_k"),
    Knob("pack_rank_weight", "float", 0.0, 6.0, default=3.0,
         description="pack sentences: weight of the item's rank, 1/(1+rank)"),
    Knob("pack_dense_weight", "float", 0.0, 6.0, default=3.0,
         description="pack sentences: weight of the sentence's dense cosine to the query"),
    Knob("pack_lexical_weight", "float", 0.0, 2.0, default=0.5,
         description="pack sentences: weight of the idf-weighted query-term overlap"),
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_LEAD = re.compile(r"^[^:\n]{1,60}:\s")  # "John (16 July 2023): " / "2 August 2023 (...) - John: "


def packer_name(config: dict[str, Any]) -> str:
    return PACKERS[int(config.get("pack", 0) or 0)]


def pool_size(config: dict[str, Any], top_k: int) -> int:
    """Items the retriever ranks for one context."""
    return max(top_k, 1) * (int(config.get("pack_pool", 2)) if packer_name(config) == "sentences" else 1)


def pack_context(query: Query, ranked: list[ScoredItem], *, top_k: int, budget_tokens: int | None,
                 config: dict[str, Any], embedder: Any, trace: dict[str, Any]) -> Retrieval:
    """The context of ``ranked`` under the configured packer."""
    if packer_name(config) == "items":
        return pack(query, ranked, top_k=top_k, budget_tokens=budget_tokens, trace=trace)
    return pack_sentences(query, ranked[:pool_size(config, top_k)], budget_tokens=budget_tokens, embedder=embedder,
                          rank_weight=float(config.get("pack_rank_weight", 3.0)),
                          dense_weight=float(config.get("pack_dense_weight", 3.0)),
                          lexical_weight=float(config.get("pack_lexical_weight", 0.5)), trace=trace)


def split_sentences(text: str) -> list[str]:
    return [s for s in (p.strip() for p in _SENTENCE.split(text)) if s]


def header(item: Any) -> str:
    when = f" {item.event_time}" if item.event_time else ""
    return f"[{item.kind}{when}]"


def pack_sentences(query: Query, ranked: list[ScoredItem], *, budget_tokens: int | None, embedder: Any = None,
                   rank_weight: float = 3.0, dense_weight: float = 3.0, lexical_weight: float = 0.5,
                   trace: dict[str, Any] | None = None) -> Retrieval:
    """Keep the best sentences of ``ranked`` within ``budget_tokens`` words, headers included.

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
    chosen: dict[int, list[int]] = {}
    used = 0
    for i in sorted(range(len(cands)), key=lambda i: (-scores[i], i)):
        r, j, sentence = cands[i]
        item = ranked[r].item
        cost = count_tokens(sentence)
        if r not in chosen:  # the first sentence of an item brings its header (and lead, if not itself)
            cost += count_tokens(header(item)) + (count_tokens(_lead(item.text)) if j > 0 else 0)
        elif 0 not in chosen[r] and j == 0:
            cost -= count_tokens(_lead(item.text))  # the lead is now part of the kept first sentence
        if budget_tokens is not None and used + cost > budget_tokens:
            continue
        chosen.setdefault(r, []).append(j)
        used += cost
    items, lines = [], []
    for r in sorted(chosen):
        scored, kept, sentences = ranked[r], sorted(chosen[r]), split[r]
        lead = _lead(scored.item.text) if kept[0] > 0 else ""
        lines.append(" ".join([header(scored.item), *([lead.strip()] if lead else []), *(sentences[j] for j in kept)]))
        partial = len(kept) < len(sentences)
        items.append(ScoredItem(scored.item, scored.score,
                                {**scored.trace, "sentences": kept, **({"truncated": True} if partial else {})}))
    t = dict(trace or {})
    t.update({"packer": "sentences", "budget_tokens": budget_tokens, "tokens_used": used, "candidates": len(ranked),
              "sentences_scored": len(cands)})
    return Retrieval(query=query, items=items, context="\n".join(lines), trace=t)


def _lead(text: str) -> str:
    m = _LEAD.match(text)
    return m.group(0) if m else ""

"""Failure attribution from provenance and lineage: for a failed question, which module lost its
gold evidence — ``encode`` (never written into any item), ``manage`` (the manager dropped,
superseded or deleted it), ``store`` (kept by the manager but not active in the store) or
``retrieve`` (in the store, not returned within the budget).

Example::

    trace = WriteTrace()
    trace.record(encoded_items, kept_items)            # after each MemoryProgram.write
    stage, facts = attribute(["D1:3"], trace, store, "conv-1", retrieved_items)
"""
from __future__ import annotations

import weakref
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

from memarch.modules.retrievers.session import SessionRetriever, session_of
from memarch.modules.stores.lexical import stem_only_terms
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.trial import MODULES

if TYPE_CHECKING:
    from memarch.modules.stores.base import Store
    from memarch.pipeline.text_caches import TextCaches


def sources(item: MemoryItem) -> list[str]:
    """What an item cites (`MemoryItem.cited_ids`)."""
    return item.cited_ids()


@dataclass
class WriteTrace:
    """What the encoders produced and what the manager let through, per namespace and source id."""

    encoded: dict[str, dict[str, set[str]]] = field(default_factory=dict)  # ns -> source id -> item ids
    kept: dict[str, set[str]] = field(default_factory=dict)  # ns -> item ids returned by on_insert

    def record(self, encoded: Iterable[MemoryItem], kept: Iterable[MemoryItem]) -> None:
        for it in encoded:
            by_source = self.encoded.setdefault(it.namespace, {})
            for sid in sources(it):
                by_source.setdefault(sid, set()).add(it.id)
        for it in kept:
            self.kept.setdefault(it.namespace, set()).add(it.id)


class StoreView:
    """Source id -> stored items of one namespace (tombstones included), caught up with the store's
    journal when its version moves (rebuilt for another store, or when the journal cannot say what
    changed)."""

    def __init__(self) -> None:
        # ns -> (store, version, source id -> items, item id -> the source ids it is listed under)
        self._cache: dict[str, tuple[weakref.ref, int, dict[str, list[MemoryItem]], dict[str, tuple[str, ...]]]] = {}

    def by_source(self, store: "Store", namespace: str) -> dict[str, list[MemoryItem]]:
        version = store.version(namespace)
        hit = self._cache.get(namespace)
        if hit is not None and hit[0]() is not store:
            hit = None
        if hit is not None and hit[1] == version:
            return hit[2]
        touched = store.changes_since(namespace, hit[1]) if hit is not None else None
        if touched is None:
            index: dict[str, list[MemoryItem]] = {}
            listed: dict[str, tuple[str, ...]] = {}
            for it in store.list(namespace, include_deleted=True):
                _list_under(index, listed, it)
        else:
            index, listed = hit[2], hit[3]
            for iid in touched:
                for sid in listed.pop(iid, ()):
                    index[sid] = [it for it in index[sid] if it.id != iid]
                item = store.get(iid, namespace, include_deleted=True)
                if item is not None:
                    _list_under(index, listed, item)
        self._cache[namespace] = (weakref.ref(store), version, index, listed)
        return index


def _list_under(index: dict[str, list[MemoryItem]], listed: dict[str, tuple[str, ...]], item: MemoryItem) -> None:
    cited = tuple(dict.fromkeys(sources(item)))
    for sid in cited:
        index.setdefault(sid, []).append(item)
    listed[item.id] = cited


def _removed_by_manager(item: MemoryItem) -> bool:
    """An inactive item whose lineage shows a manager acting on it (superseded, merged, pruned)."""
    return not item.active and any(e.actor.startswith("manager:") for e in item.lineage)


def loss_stage(sid: str, namespace: str, trace: WriteTrace, stored: dict[str, list[MemoryItem]]) -> str:
    """Where gold source ``sid`` was lost, given that it was not retrieved."""
    items = stored.get(sid, [])
    if any(it.active for it in items):
        return "retrieve"
    encoded_ids = trace.encoded.get(namespace, {}).get(sid, set())
    if not encoded_ids and not items:
        return "encode"
    kept = trace.kept.get(namespace, set())
    if encoded_ids and not (encoded_ids & kept):
        return "manage"  # the manager's on_insert let none of them through
    if any(_removed_by_manager(it) for it in items):
        return "manage"
    return "store"


def attribute(gold: Iterable[str], trace: WriteTrace, store: "Store | None", namespace: str,
              retrieved: Iterable[MemoryItem], *, view: StoreView | None = None
              ) -> tuple[str | None, dict[str, Any]]:
    """(module that lost the answer or None, the facts behind it) for one failed question.

    None when the question has no gold evidence, or when every gold id was retrieved (the failure
    is the reader's or the metric's, not memory's). With several gold ids lost at different
    stages the most common stage wins, ties going to the earliest stage in the pipeline.
    """
    gold = list(dict.fromkeys(gold))
    covered = {sid for it in retrieved for sid in sources(it)}
    facts: dict[str, Any] = {"gold": gold, "retrieved_sources": sorted(covered & set(gold))}
    if not gold:
        facts["reason"] = "no gold evidence"
        return None, facts
    missing = [sid for sid in gold if sid not in covered]
    if not missing:
        facts["reason"] = "all gold evidence retrieved"
        return None, facts
    if store is None:  # the no-memory baseline: nothing was ever written
        facts.update(lost={sid: "encode" for sid in missing}, reason="no memory")
        return None, facts
    stored = (view or StoreView()).by_source(store, namespace)
    lost = {sid: loss_stage(sid, namespace, trace, stored) for sid in missing}
    counts = Counter(lost.values())
    stage = max(MODULES, key=lambda m: (counts.get(m, 0), -MODULES.index(m)))
    facts["lost"] = lost
    facts["encoded"] = sorted(sid for sid in gold if trace.encoded.get(namespace, {}).get(sid))
    facts["stored"] = sorted(sid for sid in gold if any(it.active for it in stored.get(sid, [])))
    return stage, facts


def gold_rank(read: Any, query: Any, lost: Iterable[str], top_k: int, read_items: int,
              texts: TextCaches | None = None) -> dict[str, Any]:
    """Where the lost gold sits in a deeper read of the same query: ``gold_rank`` (1-based rank of
    the first item citing a gold id lost at ``retrieve``; None when not within ``rank_depth``),
    with ``read_items`` and ``top_k`` of the read that failed — the evidence of a numeric move
    such as "retrieve.top_k 4 -> 8". A fusing retriever's ranks of that item on each side
    (``gold_dense_rank`` / ``gold_lexical_rank``, None where a side did not rank it) are kept too:
    the evidence of "retrieve.fusion rrf -> zscore" (the sides disagree on the gold). Items written
    by episodes (a conversation's sessions) add ``gold_session_rank`` / ``gold_rank_in_sessions``
    (`_session_ranks`), the evidence of "retrieve -> session"; ``gold_stem_only``, how many of the
    query's terms match that item only as stems (`stem_only_terms`), the evidence of "retrieve.stem 0 -> 1".
    ``read`` is ``program.read``-like; reads never change memory. ``texts``: whose memos keep the
    terms and stems compared (the read store's `Resources.texts`).
    """
    depth = max(2 * int(top_k), 20)
    lost = set(lost)
    # None would mean "the program's budget" to program.read: a budget no context reaches instead.
    deeper = read(query, top_k=depth, context_budget=1 << 30)
    found = next(((i, s) for i, s in enumerate(deeper.items, start=1) if lost & set(sources(s.item))), None)
    out = {"gold_rank": found[0] if found else None, "rank_depth": depth, "read_items": int(read_items),
           "top_k": int(top_k)}
    trace = found[1].trace if found else {}
    if "dense_rank" in trace and "lexical_rank" in trace:
        out["gold_dense_rank"], out["gold_lexical_rank"] = trace["dense_rank"], trace["lexical_rank"]
    if found is not None and found[1].item.episode_id:
        out.update(_session_ranks([s.item for s in deeper.items[:found[0]]]))
    if found is not None and getattr(query, "text", None):  # the evidence of "retrieve.stem 0 -> 1"
        out["gold_stem_only"] = len(stem_only_terms(query.text, found[1].item.text, texts))
    return out


TOP_SESSIONS = SessionRetriever.DEFAULTS["sessions"]  # the sessions a session-first read keeps by default


def _session_ranks(ranked: list[MemoryItem]) -> dict[str, int]:
    """For a deeper read cut at the gold item (its last element): ``gold_session_rank``, the rank of
    the gold item's session (its episode) among the read's sessions ordered by their best item, and
    ``gold_rank_in_sessions``, the gold item's rank once the items of sessions outside the first
    `TOP_SESSIONS` are dropped — the evidence of "retrieve -> session": the gold's session was found
    but other sessions' items pushed its turn out of the context."""
    order = list(dict.fromkeys(session_of(it) for it in ranked))
    top = set(order[:TOP_SESSIONS])
    return {"gold_session_rank": order.index(session_of(ranked[-1])) + 1,
            "gold_rank_in_sessions": sum(1 for it in ranked if session_of(it) in top)}


def attribution_rows(result) -> list[dict[str, Any]]:
    """One row per failed query of a `TrialResult`: the data the diagnosis reads."""
    return [{"query_id": o.query_id, "category": o.category, "score": o.score, "module": o.attribution,
             **{k: v for k, v in o.evidence.items() if k in ("gold", "lost", "encoded", "stored",
                                                              "retrieved_sources", "reason", "question",
                                                              "gold_rank", "rank_depth", "read_items", "top_k",
                                                              "gold_dense_rank", "gold_lexical_rank",
                                                              "gold_session_rank", "gold_rank_in_sessions", "gold_stem_only")}}
            for o in result.outcomes if not o.success]

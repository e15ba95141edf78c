"""Query-aware candidate sides, fused with a retriever's own ranking before packing: time-aware
(the question's period, or items with a resolved event date for a "when" question), a recency
prior, and entity-keyed lookup (items keyed by a name the question uses, even when the item's text
names it otherwise, e.g. "Mel" for Melanie, or "I" in her own turn).

Each side is a ranked list; an item's fused score is ``1 / (K + rank)`` in the retriever's own
ranking plus ``weight / (K + rank)`` in each side that holds it (reciprocal-rank fusion, K = 60), so
the sides need no common score scale with any retriever. The time and entity sides pull items from
the whole readable memory (dense search restricted to the side's items), not only from the
retriever's pool. Every weight defaults to 0: the ranking is then the retriever's, unchanged.

The question's period is parsed LM-free with the event encoder's date rules
(`memarch.pipeline.dates`), anchored at the question's time or, without one,
at the newest dated item of the namespace (questions come after the conversation).
"""
from __future__ import annotations

import calendar
import functools
import datetime as dt
import re
from typing import Any, Callable

from memarch.modules.retrievers._eligibility import eligible
from memarch.modules.stores import VersionedCache
from memarch.pipeline.dates import find_time_expressions, parse_session_date
from memarch.pipeline.episodes import Query
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.knobs import Knob
from memarch.pipeline.retrieval import ScoredItem

AWARENESS = (
    Knob("time_weight", "float", 0.0, 2.0, default=0.0,
         description="time-aware: weight of the items dated in the question's period (for a when-question: "
                     "items with a resolved event date); 0 off", group="time-aware"),
    Knob("recency_weight", "float", 0.0, 2.0, default=0.0,
         description="time-aware: weight of a recency prior over the retriever's pool (newest first); 0 off",
         group="time-aware"),
    Knob("entity_weight", "float", 0.0, 2.0, default=0.0,
         description="entity-keyed: weight of the items keyed by an entity the question names; 0 off",
         group="entity-keyed"),
    Knob("aware_pool", "int", 2, 60, log=True, default=10,
         description="time-aware and entity-keyed: items each side pulls from memory",
         group="time-aware & entity-keyed"),
)
FUSION_K = 60
_WHEN = re.compile(r"^\s*(?:when\b|what (?:date|day|time|year|month|week)\b|which (?:date|day|year|month|week)\b|"
                   r"how long ago\b|since when\b)|\bwhen (?:did|does|do|is|was|were|will|has|had|are)\b", re.I)
_NOW = re.compile(r"\b(?:current(?:ly)?|now|so far|to date|latest|most recent(?:ly)?|still|any ?more|these days|"
                  r"at the moment|at present|nowadays)\b", re.I)
_NAME = re.compile(r"\b([A-Z][a-zA-Z\-]{1,})(?:'s|’s)?\b")
_ENTITY_FIELDS = ("name", "subject", "speaker")


def is_when_question(text: str) -> bool:
    """Does the question ask for a time ("When did ...", "What year ...")?"""
    return _WHEN.search(text) is not None


def asks_about_time(text: str) -> bool:
    """A when-question, or a question naming a period ("in May 2023", "last week"): what the
    time-aware side serves (anchored at an arbitrary date: only whether one is named matters)."""
    return is_when_question(text) or bool(find_time_expressions(text, dt.date(2000, 1, 1), "past"))


def asks_about_present(text: str) -> bool:
    """A question about the state now ("my current score", "do I still ...", "so far", "the
    latest"): where a newer mention supersedes an older one, what the recency prior serves."""
    return _NOW.search(text) is not None


def period_of(found: Any) -> tuple[dt.date, dt.date]:
    """``[start, end)`` of a resolved time expression (`ResolvedDate`)."""
    start = found.date
    g = found.granularity
    if g == "day":
        return start, start + dt.timedelta(days=1)
    if g == "weekend":
        return start, start + dt.timedelta(days=2)
    if g == "week":
        return start, start + dt.timedelta(days=7)
    if g == "month":
        days = calendar.monthrange(start.year, start.month)[1]
        return start, start + dt.timedelta(days=days)
    if g == "season":
        end = start
        for _ in range(3):
            end = end + dt.timedelta(days=calendar.monthrange(end.year, end.month)[1])
        return start, end
    return start, dt.date(start.year + 1, 1, 1)


def item_date(item: MemoryItem) -> dt.date | None:
    if not item.event_time:
        return None
    return _date(str(item.event_time)[:10])


@functools.lru_cache(maxsize=1 << 14)
def _date(text: str) -> dt.date | None:  # a few hundred distinct dates, read per item per question
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        return None


def has_event_date(item: MemoryItem) -> bool:
    """An item dated by what its text says happened (the event encoder's resolved dates), not by
    when it was said or written."""
    return item.fields.get("granularity") not in (None, "session") and item_date(item) is not None


class _NamespaceFacts:
    """Per (store, namespace, version): the newest item date and the entity index name -> item ids.
    ``known``: (date, names) per item id from an earlier version, for the items no write touched since."""

    def __init__(self, items: list[MemoryItem], known: dict[str, tuple[Any, list[str]]] | None = None):
        known = {} if known is None else known
        dates = []
        self.names: dict[str, set[str]] = {}
        for it in items:
            entry = known.get(it.id)
            if entry is None:
                entry = known[it.id] = (item_date(it), entity_names(it))
            if entry[0] is not None:
                dates.append(entry[0])
            for name in entry[1]:
                self.names.setdefault(name, set()).add(it.id)
        self.newest = max(dates) if dates else None


_FACTS = VersionedCache()
# In the store's caches, per namespace: (version, (date, names) per item id) — an item's entry stays
# valid until a write touches it (the store's journal says which), so a new version re-reads only those.
_KNOWN = f"{__name__}.known"


def namespace_facts(store: Any, namespace: str) -> _NamespaceFacts:
    return _FACTS.get(store, namespace, lambda: _build_facts(store, namespace))


def _build_facts(store: Any, namespace: str) -> _NamespaceFacts:
    per_store = store.caches.part(_KNOWN)
    version = store.version(namespace)
    last = per_store.get(namespace)
    known: dict[str, tuple[Any, list[str]]] = {}
    if last is not None:
        touched = store.changes_since(namespace, last[0])
        if touched is not None:
            known = last[1]
            for iid in touched:
                known.pop(iid, None)
    per_store[namespace] = (version, known)
    return _NamespaceFacts([it for it in store.list(namespace) if it.active], known)


def entity_names(item: MemoryItem) -> list[str]:
    """The lower-cased names an item is keyed by: an entity note's entity, a fact's subject, the
    speaker of a turn or event (the speakers of a chunk)."""
    out = [str(item.fields[f]).strip().lower() for f in _ENTITY_FIELDS if item.fields.get(f)]
    out += [str(s).strip().lower() for s in item.fields.get("speakers", ()) if s]
    return [n for n in dict.fromkeys(out) if n]


def named_entities(text: str, known: set[str] | dict[str, Any]) -> list[str]:
    """Index names the question uses: a capitalised word equal to a name or to one of its words, or
    the start (3+ letters) of a name's first word ("Mel" -> "melanie")."""
    out: list[str] = []
    for m in _NAME.finditer(text):
        word = m.group(1).lower()
        for name in known:
            parts = name.split()
            if word == name or word in parts or (len(word) >= 3 and parts and parts[0].startswith(word)):
                if name not in out:
                    out.append(name)
    return out


def question_period(query: Query, facts: _NamespaceFacts) -> tuple[Any, tuple[dt.date, dt.date]] | None:
    """The first time expression of the question and its ``[start, end)``, resolved against the
    question's time or the namespace's newest date."""
    anchor = parse_session_date(query.time) if query.time else facts.newest
    found = find_time_expressions(query.text, anchor, "past")
    if not found:
        return None
    return found[0], period_of(found[0])


def aware_settings(config: dict[str, Any]) -> dict[str, float]:
    return {k.name: k.coerce(config.get(k.name, k.default)) for k in AWARENESS}


def fuse_aware(query: Query, ranked: list[ScoredItem], store: Any, *, config: dict[str, Any], embedder: Any,
               trace: dict[str, Any]) -> list[ScoredItem]:
    """``ranked`` fused with the time, recency and entity sides the config turns on (unchanged when
    every weight is 0). Adds ``time_rank`` / ``recency_rank`` / ``entity_rank`` and ``fused`` to the
    item traces and what was parsed (``time_period``, ``when_question``, ``entities``) to ``trace``."""
    s = aware_settings(config)
    if not (s["time_weight"] or s["recency_weight"] or s["entity_weight"]) or store is None:
        return ranked
    facts = namespace_facts(store, query.namespace)
    pool = int(s["aware_pool"])
    sides: list[tuple[str, float, list[MemoryItem]]] = []
    vector = None

    def pulled(keep: Callable[[MemoryItem], bool]) -> list[MemoryItem]:
        nonlocal vector
        if vector is None:
            vector = embedder.embed_one(query.text)
        hits = store.search(vector, pool, query.namespace, exclude=lambda it: not (eligible(it, query) and keep(it)))
        return [it for it, _ in hits]

    if s["time_weight"]:
        period = question_period(query, facts)
        if period is not None:
            (found, (start, end)) = period
            trace["time_period"] = [found.phrase, start.isoformat(), end.isoformat()]
            sides.append(("time", s["time_weight"],
                          pulled(lambda it: (d := item_date(it)) is not None and start <= d < end)))
        elif is_when_question(query.text):
            trace["when_question"] = True
            sides.append(("time", s["time_weight"], pulled(has_event_date)))
    if s["entity_weight"]:
        names = named_entities(query.text, facts.names)
        if names:
            ids = set().union(*(facts.names[n] for n in names))
            trace["entities"] = names
            sides.append(("entity", s["entity_weight"], pulled(lambda it: it.id in ids)))
    if s["recency_weight"]:
        dated = [(d, sc.item) for sc in ranked if (d := item_date(sc.item)) is not None]
        newest = [it for _, it in sorted(dated, key=lambda pair: pair[0], reverse=True)]
        sides.append(("recency", s["recency_weight"], newest))

    fused: dict[str, ScoredItem] = {}
    for rank, sc in enumerate(ranked, start=1):
        fused[sc.item.id] = ScoredItem(sc.item, 1.0 / (FUSION_K + rank), dict(sc.trace))
    for side, weight, items in sides:
        for rank, it in enumerate(items, start=1):
            entry = fused.get(it.id)
            if entry is None:
                entry = fused[it.id] = ScoredItem(it, 0.0, {"pulled_by": side})
            entry.score += weight / (FUSION_K + rank)
            entry.trace[f"{side}_rank"] = rank
    out = sorted(fused.values(), key=lambda sc: -sc.score)  # stable: ties keep the retriever's order
    for sc in out:
        sc.trace["fused"] = round(sc.score, 6)
    trace["aware_sides"] = {side: len(items) for side, _, items in sides}
    return out

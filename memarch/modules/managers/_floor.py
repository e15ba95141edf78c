"""The common floor every manager preset stands on (AutoMem): on insert — signature dedup,
upsert by key, near-duplicate merge, conflict detection; after a task — access stats, boost on
success, penalise on failure; periodically — quality curation, utility audit, size-capped prune."""
from __future__ import annotations

import logging
import weakref
from collections import Counter, defaultdict
from typing import Any

import numpy as np

from memarch.modules.managers._budget import active_words, prune_lowest, replace_with
from memarch.modules.managers._content import may_absorb, same_content
from memarch.modules.managers._keys import same_key_items
from memarch.modules.managers._signatures import signature_index
from memarch.modules.managers._conflicts import (
    keys_compatible, newer_or_equal, opposite_outcomes, same_key, signature,
)
from memarch.modules.managers.base import Manager
from memarch.modules.managers._near_batch import NEAR_K, BatchSearch, earlier_may_reach
from memarch.modules.stores.activity import INACTIVE
from memarch.modules.stores.base import Store
from memarch.pipeline.episodes import Episode
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.knobs import Knob
from memarch.pipeline.registry import REGISTRY
from memarch.pipeline.resources import Resources
from memarch.pipeline.retrieval import Retrieval

log = logging.getLogger(__name__)

# AutoMem's floor was tuned for agent tasks. A conversation's turns and facts are the memory
# itself and chit-chat embeds close together, so for that family the defaults only collapse
# near-verbatim repeats and never cap, audit away, or generalise.
CONVERSATION_DEFAULTS: dict[str, Any] = {
    "dedup_threshold": 0.98, "merge_threshold": 0.98, "max_items": None, "min_utility": None,
    "generalise": False,
}


def floor_knobs(*, dedup: float, decay: float) -> tuple[Knob, ...]:
    """The floor's numeric knobs with a preset's defaults (conversation memory dedups at 0.98)."""
    return (Knob("dedup_threshold", "float", 0.8, 1.0, default=dedup,
                 description="cosine at which a new item merges into a near-duplicate",
                 family_defaults=(("conversation", CONVERSATION_DEFAULTS["dedup_threshold"]),)),
            Knob("decay", "float", 0.8, 1.0, default=decay,
                 description="utility kept per episode without use (1: none); ranks items to prune"))


class FloorManager(Manager):
    """Base of the four presets; subclasses set the class defaults and add their own passes.

    Config keys (all optional): ``dedup_threshold`` (cosine for a near-duplicate merge),
    ``conflict_threshold`` (cosine for a conflict between opposite outcomes, 0.85),
    ``cross_type`` (dedup across kinds), ``boost`` / ``penalty`` (strength change per success /
    failure, 0.25), ``decay`` (strength kept per episode without use, 1.0 = none), ``max_items``
    (size cap, 300), ``min_utility`` (audit floor, 0.1), ``curate_failures`` (failures with no
    success that make an item misleading, 3), ``family`` (override the family inferred from the
    episodes / item kinds), ``period`` (episodes between periodic passes, 10), ``memory_budget``
    (words of active items per namespace after any write, None = unlimited; see `fit_budget`).

    Family-aware defaults: for ``conversation`` memory (see `CONVERSATION_DEFAULTS`) dedup and
    merge need cosine 0.98, and there is no size cap, utility floor or generalisation, unless the
    config sets them explicitly.
    """

    dedup_threshold: float = 0.95
    conflict_threshold: float = 0.85
    cross_type: bool = False
    boost: float = 0.25
    penalty: float = 0.25
    decay: float = 1.0
    curate_failures: int = 3
    max_items: int | None = 300
    min_utility: float | None = 0.1

    def __init__(self, resources: Resources | None = None, **config: Any):
        super().__init__(resources, **config)
        cls = type(self)
        self.dedup_threshold = float(config.get("dedup_threshold", cls.dedup_threshold))
        self.max_items = config.get("max_items", cls.max_items)
        self.min_utility = config.get("min_utility", cls.min_utility)
        self.conflict_threshold = float(config.get("conflict_threshold", cls.conflict_threshold))
        self.cross_type = bool(config.get("cross_type", cls.cross_type))
        self.boost = float(config.get("boost", cls.boost))
        self.penalty = float(config.get("penalty", cls.penalty))
        self.decay = float(config.get("decay", cls.decay))
        self.curate_failures = int(config.get("curate_failures", cls.curate_failures))
        self._ticks: dict[str, int] = {}  # logical clock: episodes written per namespace
        self._family: str | None = config.get("family")
        self.failed_queries: dict[str, list[str]] = defaultdict(list)  # item id -> failed task texts
        self._curated: dict[str, tuple[Any, int]] = {}  # namespace -> (store ref, version at the last curation)

    # -- clock, family, utility ------------------------------------------------------------------
    def tick(self, store: Store, namespace: str) -> int:
        """Episodes seen in ``namespace``; after a reload it resumes from the items' own stamps."""
        if namespace not in self._ticks:
            seen = [_admitted_tick(it) for it in store.list(namespace, include_deleted=True)]
            self._ticks[namespace] = max([t for t in seen if t is not None], default=-1) + 1
        return self._ticks[namespace]

    def at(self, store: Store, namespace: str, time: str | None = None) -> str:
        """Lineage time stamp: the data's own time when there is one, else the logical clock."""
        return time or f"episode:{self.tick(store, namespace)}"

    def family(self, store: Store, namespace: str, items: list[MemoryItem] | None = None) -> str:
        """``family`` config, else the family of the last episode, else of the items' encoders."""
        if self._family:
            return self._family
        kinds = Counter(REGISTRY.family_of_encoder(it.kind) for it in (items or store.list(namespace)))
        kinds.pop(None, None)
        return kinds.most_common(1)[0][0] if kinds else "experience"

    def setting(self, name: str, store: Store, namespace: str, items: list[MemoryItem] | None = None) -> Any:
        """A family-aware setting: explicit config first, then the family's default, then the preset's."""
        if name in self.config:
            return self.config[name]
        if self.family(store, namespace, items) == "conversation" and name in CONVERSATION_DEFAULTS:
            return CONVERSATION_DEFAULTS[name]
        return getattr(self, name)

    def utility(self, item: MemoryItem, now: int) -> float:
        """Strength (moved by feedback) decayed by the episodes since the item was last touched."""
        last = _last_touch(item)
        age = max(0, now - last) if last is not None else 0
        return item.usage.strength * (self.decay ** age)

    # -- on insert -------------------------------------------------------------------------------
    def on_insert(self, items: list[MemoryItem], store: Store) -> list[MemoryItem]:
        by_ns: dict[str, list[MemoryItem]] = defaultdict(list)
        for it in items:
            by_ns[it.namespace].append(it)
        accepted: list[MemoryItem] = []
        for ns, batch in by_ns.items():
            accepted.extend(self._insert_batch(batch, store, ns))
        return accepted

    def _insert_batch(self, batch: list[MemoryItem], store: Store, ns: str) -> list[MemoryItem]:
        tick = self.tick(store, ns)
        dedup = float(self.setting("dedup_threshold", store, ns, batch))
        vecs = self.resources.embedder.embed([it.text for it in batch])
        pending: list[MemoryItem] = []
        pending_vecs = np.empty_like(vecs)  # rows 0..len(pending)-1: the admitted items' vectors
        rejected: list[MemoryItem] = []
        stored = signature_index(store, ns)  # the namespace's signatures, caught up, not re-hashed
        texts = store.resources.texts
        sigs: dict[str, MemoryItem] = {}  # this batch's admitted items, which win over stored ones
        # Every item's near-duplicate candidates in the store, in one batch: valid while the store
        # is unchanged (an item whose check comes after a write in this batch searches again).
        near = BatchSearch(store, ns, vecs, NEAR_K, min(dedup, self.conflict_threshold))
        # Whether any earlier item of the batch may reach the threshold: an item none may reach skips
        # its comparison with the admitted ones (a subset of those), which would find nothing.
        reach = earlier_may_reach(vecs, min(dedup, self.conflict_threshold))
        self.begin_run()
        for j, (item, vec) in enumerate(zip(batch, vecs)):
            if self._same_id(item, store, ns, pending):
                continue
            sig = signature(item, texts)
            twin = sigs.get(sig) or stored.get(sig, store)
            if twin is not None and twin.active:
                self._collapse(item, twin, store, "same text", 1.0)
                rejected.append(item)
                continue
            if item.key is not None and not self._upsert(item, store, ns, pending):
                rejected.append(item)
                continue
            if not self._near(item, vec, store, ns, pending if reach[j] else [], pending_vecs[:len(pending)], dedup,
                              near.row(j)):
                rejected.append(item)
                continue
            item.log("admitted", self.actor, at=self.at(store, ns, item.event_time), tick=tick)
            pending.append(item)
            pending_vecs[len(pending) - 1] = vec
            sigs[sig] = item
        # Tombstones (rejected now, or superseded later in the same batch) stay listable.
        rejected += [it for it in pending if not it.active]
        if rejected:
            store.add(rejected)
        return [it for it in pending if it.active]

    def begin_run(self) -> None:
        """Called once per insert batch (resets per-run LM budgets in subclasses)."""

    def _same_id(self, item: MemoryItem, store: Store, ns: str, pending: list[MemoryItem]) -> bool:
        """The same encoder output written again (same episode re-encoded): keep the stored one."""
        old = store.get(item.id, ns, include_deleted=True) or next((p for p in pending if p.id == item.id), None)
        if old is None:
            return False
        old.log("rewritten", self.actor, "the same item was written again", at=self.at(store, ns, item.event_time))
        if store.get(old.id, ns, include_deleted=True) is old:
            store.update(old)
        return True

    def _collapse(self, dup: MemoryItem, into: MemoryItem, store: Store, why: str, sim: float) -> None:
        """``dup`` joins ``into``: its provenance and text are kept on the survivor (``merged_from``
        in the lineage, with ``data.absorbed`` = {id: text}, and in ``fields``), it becomes a tombstone."""
        ns = into.namespace
        at = self.at(store, ns, dup.event_time)
        into.source_ids = list(dict.fromkeys(into.source_ids + dup.source_ids))
        into.fields["merged_from"] = list(dict.fromkeys(into.fields.get("merged_from", []) + [dup.id]))
        into.log("merged_from", self.actor, f"duplicate write ({why})", [dup.id], at, similarity=round(sim, 4),
                 episode_id=dup.episode_id, absorbed={dup.id: dup.text})
        dup.status = "superseded"
        dup.log("superseded_by", self.actor, f"duplicate of {into.id} ({why})", [into.id], at)
        self._save(into, store)

    def _save(self, item: MemoryItem, store: Store) -> None:
        if store.get(item.id, item.namespace, include_deleted=True) is not None:
            store.update(item)

    def supersede(self, old: MemoryItem, new: MemoryItem, store: Store, reason: str) -> None:
        """``new`` replaces ``old``; ``old`` stays listable as a tombstone pointing at ``new``."""
        at = self.at(store, old.namespace, new.event_time)
        new.log("supersedes", self.actor, reason, [old.id], at)
        if store.get(old.id, old.namespace) is not None:
            store.delete(old.id, old.namespace, reason=reason, actor=self.actor, at=at,
                         status="superseded", related=[new.id])
        else:  # still pending in this batch
            old.status = "superseded"
            old.log("superseded_by", self.actor, reason, [new.id], at)
        self._save(new, store)

    def _upsert(self, item: MemoryItem, store: Store, ns: str, pending: list[MemoryItem]) -> bool:
        """Upsert by key: a newer (or equally new) value supersedes; an older one is superseded."""
        olds = same_key_items(store, ns, item)  # == [it for it in store.list(ns) if same_key(it, item)]
        olds += [p for p in pending if p.active and same_key(p, item)]
        for old in olds:
            if newer_or_equal(item, old):
                self.supersede(old, item, store, f"newer value for key {item.key!r}")
            else:
                self.supersede(item, old, store, f"older than the stored value for key {item.key!r}")
                return False
        return True

    def _near(self, item: MemoryItem, vec: np.ndarray, store: Store, ns: str,
              pending: list[MemoryItem], pending_vecs: np.ndarray, dedup: float,
              found: list[tuple[MemoryItem, float]] | None = None) -> bool:
        """Near-duplicate merge and opposite-outcome conflicts; False if ``item`` is not kept.
        ``found``: the store's `NEAR_K` nearest active items, when already searched."""
        threshold = min(dedup, self.conflict_threshold)
        if found is None:
            found = store.search_many(vec[None, :], NEAR_K, ns, exclude=INACTIVE, min_score=threshold)[0]
        # Only candidates at or above the threshold can act: the others are skipped below anyway,
        # so they are dropped before the sort (which is stable: equal similarities keep their order).
        cands = [c for c in found if not c[1] < threshold]
        if pending:
            sims = (pending_vecs @ vec).astype(np.float64)  # compared as the Python floats below are
            cands += [(pending[i], float(sims[i])) for i in np.flatnonzero(~(sims < threshold)).tolist()
                      if pending[i].active]
        texts = store.resources.texts
        for other, sim in sorted(cands, key=lambda c: -c[1]) if len(cands) > 1 else cands:
            if other.id == item.id or not keys_compatible(item, other):
                continue
            if opposite_outcomes(item, other):
                # Opposite outcomes about different numbers / names / codes are two facts, no conflict.
                if sim >= self.conflict_threshold and same_content(item.text, other.text, texts) \
                        and not self.resolve_conflict(item, other, store, sim):
                    return False
                continue
            # A near-duplicate only merges into an item that says everything it says (`_content`).
            if sim >= dedup and (self.cross_type or other.kind == item.kind) \
                    and may_absorb(other.text, item.text, texts):
                self._collapse(item, other, store, f"cosine {sim:.2f}", sim)
                return False
        return True

    def resolve_conflict(self, new: MemoryItem, old: MemoryItem, store: Store, sim: float) -> bool:
        """LM-free rule: both stay, each flagged with the other (a judge may decide later).
        Returns whether ``new`` is kept."""
        at = self.at(store, old.namespace, new.event_time)
        reason = f"opposite outcomes at cosine {sim:.2f}"
        new.log("conflict", self.actor, reason, [old.id], at, decision="keep_both")
        old.log("conflict", self.actor, reason, [new.id], at, decision="keep_both")
        self._save(old, store)
        return True

    # -- after each task -------------------------------------------------------------------------
    def after_episode(self, episode: Episode, store: Store) -> None:
        ns = episode.namespace
        if episode.turns or episode.steps:  # an empty episode says nothing about its family
            self._family = self.config.get("family") or episode.family
        self.tick(store, ns)
        self._ticks[ns] += 1

    def feedback(self, retrieval: Retrieval, success: bool | None, store: Store) -> None:
        """Access stats for every retrieved item; boost on success, penalise on failure."""
        query = retrieval.query
        for scored in retrieval.items:
            item = store.get(scored.item.id, scored.item.namespace)
            if item is None:
                continue
            ns = item.namespace
            now = self.tick(store, ns)
            item.usage.retrieved += 1
            item.usage.last_used = str(now)
            at = self.at(store, ns, query.time)
            if success is True:
                item.usage.helped_success += 1
                item.usage.strength += self.boost
                item.log("boosted", self.actor, "retrieved for a successful task", [query.id] if query.id else [],
                         at, strength=round(item.usage.strength, 4))
            elif success is False:
                item.usage.helped_failure += 1
                item.usage.strength = max(0.0, item.usage.strength - self.penalty)
                item.log("penalised", self.actor, "retrieved for a failed task", [query.id] if query.id else [],
                         at, strength=round(item.usage.strength, 4))
                self.failed_queries[item.id] = (self.failed_queries[item.id] + [query.text])[-5:]
            store.update(item)

    # -- periodic --------------------------------------------------------------------------------
    def periodic(self, store: Store, namespace: str) -> None:
        self.curate(store, namespace)
        self.audit(store, namespace)

    def curate(self, store: Store, namespace: str) -> None:
        """Quality curation: an item that only ever accompanied failures is misleading. Usage only
        changes through a store write, so only the items written since the last pass are looked at
        (all of them when the store's journal cannot say which)."""
        ref, seen = self._curated.get(namespace, (None, 0))
        touched = store.changes_since(namespace, seen) if ref is not None and ref() is store else None
        items = store.list(namespace) if touched is None else \
            [it for it in (store.get(i, namespace) for i in touched) if it is not None]
        for item in items:
            u = item.usage
            if u.helped_failure >= self.curate_failures and u.helped_success == 0:
                self.tombstone(item, store, f"curated: retrieved for {u.helped_failure} failed tasks, no success")
        self._curated[namespace] = (weakref.ref(store), store.version(namespace))

    def audit(self, store: Store, namespace: str) -> None:
        """Utility audit and size-capped prune, both as tombstones "pruned: low utility"."""
        now = self.tick(store, namespace)
        min_u = self.setting("min_utility", store, namespace)
        cap = self.setting("max_items", store, namespace)
        if min_u is None and cap is None:  # nothing to audit: do not score the whole memory
            return
        scored = [(self.utility(it, now), it) for it in store.list(namespace)]
        if min_u is not None:
            for u, it in scored:
                if u < float(min_u):
                    self.tombstone(it, store, f"pruned: low utility ({u:.3f} < {float(min_u)})")
            scored = [(u, it) for u, it in scored if it.active]
        if cap is not None and len(scored) > int(cap):
            # Lowest utility first; among equals the oldest event, then the earliest admitted.
            scored.sort(key=lambda p: (p[0], p[1].event_time or "", _admitted_tick(p[1]) or 0))
            for u, it in scored[: len(scored) - int(cap)]:
                self.tombstone(it, store, f"pruned: low utility ({u:.3f}; size cap {int(cap)})")

    def tombstone(self, item: MemoryItem, store: Store, reason: str, related: list[str] | None = None) -> None:
        store.delete(item.id, item.namespace, reason=reason, actor=self.actor,
                     at=self.at(store, item.namespace), status="deleted", related=related)

    # -- memory budget ---------------------------------------------------------------------------
    def fit_budget(self, store: Store, namespace: str, budget: int) -> None:
        """The preset's rewrites (`budget_steps`: merge, compress, generalise) while the namespace is
        over budget, then the floor's rule: prune the lowest utility first, ties oldest first."""
        for step in self.budget_steps():
            if active_words(store, namespace) <= budget:
                return
            step(store, namespace, budget)
        now = self.tick(store, namespace)
        prune_lowest(self, store, namespace, budget, lambda it: self.utility(it, now), _age_order,
                     "pruned lowest utility")

    def budget_steps(self) -> list:
        """``step(store, namespace, budget)`` rewrites run before anything is dropped (none here)."""
        return []

    def replace(self, members: list[MemoryItem], item: MemoryItem, store: Store, reason: str) -> MemoryItem:
        """``item`` replaces ``members`` (merged / compressed / generalised, "budget: ..." reason): it
        counts as written when the freshest of them was, so decay treats it as they were treated."""
        ticks = [t for t in (_last_touch(m) for m in members) if t is not None]
        item.log("admitted", self.actor, "written by the memory-budget policy",
                 at=self.at(store, item.namespace, item.event_time), tick=max(ticks) if ticks else self.tick(store, item.namespace))
        return replace_with(self, members, item, store, reason)


def _admitted_tick(item: MemoryItem) -> int | None:
    for e in item.lineage:
        if e.action == "admitted" and isinstance(e.data.get("tick"), int):
            return e.data["tick"]
    return None


def _age_order(item: MemoryItem) -> tuple:
    """Oldest first: the event time, then the episode it was admitted in."""
    return item.event_time or "", _admitted_tick(item) or 0


def _last_touch(item: MemoryItem) -> int | None:
    if item.usage.last_used is not None and str(item.usage.last_used).isdigit():
        return int(item.usage.last_used)
    return _admitted_tick(item)

"""The rewrites each manager's memory-budget policy runs before it drops anything: conflict
resolution and near-duplicate merge (json_full), compression of sessions and trajectories
(tool_manager), generalisation of clusters and graph neighbourhoods (graph_consolidate). Each
step stops as soon as the namespace fits; every member that leaves is a tombstone superseded by
the item that now stands for it."""
from __future__ import annotations

from typing import Any

import numpy as np

from memarch.modules.managers._budget import (
    active_words, combined_item, extractive_summary, item_words,
)
from memarch.modules.managers._conflicts import newer_or_equal
from memarch.modules.managers._content import same_content
from memarch.modules.managers._consolidation import clusters, linked_components, medoid, similar_pairs
from memarch.modules.managers._promotion import trajectory_actions
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.retrieval import count_words

# Edges of the graph store that say two memories belong together.
NEIGHBOUR_EDGES = ("SIMILAR", "COOCCURS", "REINFORCES")


def lm_text(manager: Any, members: list[MemoryItem], max_words: int) -> str | None:
    """The LM's rewrite of ``members`` (`GeneraliseMemories`) when it is shorter than ``max_words``;
    None means the LM-free rule (no LM, or an unusable answer: the `Judge` counts the fallback)."""
    judge = getattr(manager, "budget_judge", None)
    if judge is None or not judge.available:
        return None

    def fits(pred: Any) -> bool:
        text = str(pred.general_memory).strip()
        return bool(text) and count_words(text) <= max_words

    pred = judge(check=fits, memories=[m.text for m in members])
    if pred is None:
        return None
    manager.budget_stats["lm_texts"] += 1
    return str(pred.general_memory).strip()


# -- json_full ---------------------------------------------------------------------------------------
def resolve_key_conflicts(manager: Any, store: Any, namespace: str, budget: int) -> None:
    """Items of one kind and key that disagree: the newest value stays, the others are superseded."""
    by_key: dict[tuple[str, str], list[MemoryItem]] = {}
    for it in store.list(namespace):
        if it.key is not None:
            by_key.setdefault((it.kind, it.key), []).append(it)
    for (_, key), group in by_key.items():
        if len(group) < 2:
            continue
        newest = group[0]
        for it in group[1:]:
            newest = it if newer_or_equal(it, newest) else newest
        for it in group:
            if it is not newest:
                manager.supersede(it, newest, store, f"budget: conflict on key {key!r}, the newest value kept")
                manager.budget_stats["merged"] += 1


def merge_near_duplicates(manager: Any, store: Any, namespace: str, budget: int) -> None:
    """Clusters at cosine >= ``budget_merge_threshold`` (across kinds), largest first: one survivor
    each (LM: a rewrite of the cluster; LM-free: its most useful member), the rest superseded."""
    items = store.list(namespace)
    if len(items) < 2:
        return
    now = manager.tick(store, namespace)
    threshold = manager.budget_merge_threshold
    for g in clusters(items, store.vectors(items), threshold, cross_type=manager.cross_type,
                      texts=store.resources.texts):
        if active_words(store, namespace) <= budget:
            return
        members = [items[i] for i in g]
        reason = f"budget: near-duplicates (cosine >= {threshold}) merged"
        text = lm_text(manager, members, max(item_words(m, store.resources.texts) for m in members))
        if text is not None:
            manager.replace(members, combined_item(members, text, members[0].kind, namespace, how="merged"),
                            store, reason + " by the LM")
        else:
            keep = max(members, key=lambda it: (manager.utility(it, now), -members.index(it)))
            others = [m for m in members if m is not keep]
            at = manager.at(store, namespace, keep.event_time)
            keep.source_ids = list(dict.fromkeys(keep.source_ids + [s for m in others for s in m.source_ids]))
            keep.fields["merged_from"] = list(dict.fromkeys(keep.fields.get("merged_from", []) + [m.id for m in others]))
            keep.log("merged_from", manager.actor, reason, [m.id for m in others], at,
                     absorbed={m.id: m.text for m in others})
            store.update(keep)
            for m in others:
                store.delete(m.id, namespace, reason=f"{reason} into {keep.id}", actor=manager.actor, at=at,
                             status="superseded", related=[keep.id])
        manager.budget_stats["merged"] += len(members) - 1


# -- tool_manager ------------------------------------------------------------------------------------
def compress_sessions(manager: Any, store: Any, namespace: str, budget: int) -> None:
    """Conversation memory, oldest session first: runs of up to ``compress_window`` consecutive
    items of one session become one extractive summary (the sentences with the most content words,
    at most ``compress_ratio`` of their words; LM: a rewrite within the same length)."""
    items = [it for it in store.list(namespace) if not it.fields.get("compressed")]
    sessions: dict[str, list[MemoryItem]] = {}
    first: dict[str, tuple[str, int]] = {}
    for i, it in enumerate(items):
        sid = it.episode_id or it.id
        sessions.setdefault(sid, []).append(it)
        first[sid] = min(first.get(sid, (it.event_time or "", i)), (it.event_time or "", i))
    total = active_words(store, namespace)
    window = manager.compress_window
    for sid in sorted(sessions, key=first.__getitem__):
        group = sessions[sid]
        for start in range(0, len(group), window):
            if total <= budget:
                return
            members = group[start:start + window]
            before = sum(item_words(m, store.resources.texts) for m in members)
            limit = max(1, int(before * manager.compress_ratio))
            text = lm_text(manager, members, limit) or extractive_summary([m.text for m in members], limit)
            if len(members) < 2 or not text or count_words(text) >= before:
                continue
            item = combined_item(members, text, members[0].kind, namespace, how="compressed")
            manager.replace(members, item, store, f"budget: compressed {len(members)} turns of session {sid} "
                                                  f"({before} -> {count_words(text)} words)")
            total -= before - count_words(text)
            manager.budget_stats["compressed"] += len(members)


def compress_trajectories(manager: Any, store: Any, namespace: str, budget: int) -> None:
    """Experience memory, oldest first: a trajectory whose pattern became a workflow is folded into
    it; any other becomes a shortcut of its bare actions (observations dropped)."""
    workflows = {w.id: w for w in store.list(namespace, where={"kind": "workflow"})}
    trajectories = [t for t in store.list(namespace, where={"kind": "trajectory"}) if not t.fields.get("compressed")]
    for t in sorted(trajectories, key=lambda t: t.event_time or ""):
        if active_words(store, namespace) <= budget:
            return
        into = next((workflows[i] for e in t.lineage if e.action == "promoted_into" for i in e.related
                     if i in workflows), None)
        if into is not None:
            at = manager.at(store, namespace, t.event_time)
            into.source_ids = list(dict.fromkeys(into.source_ids + t.source_ids))
            into.fields["merged_from"] = list(dict.fromkeys(into.fields.get("merged_from", []) + [t.id]))
            into.log("merged_from", manager.actor, "budget: trajectory compressed into this workflow", [t.id], at,
                     absorbed={t.id: t.text})
            store.update(into)
            store.delete(t.id, namespace, reason=f"budget: compressed into workflow {into.id}", actor=manager.actor,
                         at=at, status="superseded", related=[into.id])
            manager.budget_stats["compressed"] += 1
            continue
        actions = trajectory_actions(t)
        task = t.fields.get("task") or ""
        text = (f"Shortcut ({t.outcome}{': ' + task if task else ''}): " + "; ".join(actions)) if actions else ""
        text = lm_text(manager, [t], item_words(t, store.resources.texts) - 1) or text
        if not text or count_words(text) >= item_words(t, store.resources.texts):
            continue
        item = combined_item([t], text, "trajectory", namespace, how="compressed",
                             fields={"task": task, "actions": actions})
        manager.replace([t], item, store, f"budget: trajectory compressed to its actions "
                                          f"({item_words(t, store.resources.texts)} -> {count_words(text)} words)")
        manager.budget_stats["compressed"] += 1


def compress(manager: Any, store: Any, namespace: str, budget: int) -> None:
    if manager.family(store, namespace) == "conversation":
        compress_sessions(manager, store, namespace, budget)
    else:
        compress_trajectories(manager, store, namespace, budget)


# -- graph_consolidate -------------------------------------------------------------------------------
def neighbourhoods(store: Any, namespace: str, items: list[MemoryItem], vecs: np.ndarray,
                   threshold: float, neighbour_threshold: float, max_size: int) -> list[list[int]]:
    """Connected groups: near-duplicates (cosine >= ``threshold`` and the same content words,
    `_content.same_content`) and graph neighbours (SIMILAR, COOCCURS, REINFORCES edges) at cosine
    >= ``neighbour_threshold`` — a lossy summary the budget asks for instead of a prune, the
    members' texts kept in the survivor's lineage; each cut to its medoid's ``max_size`` nearest
    members; largest first."""
    index = {it.id: i for i, it in enumerate(items)}
    texts = store.resources.texts
    pairs = [(i, j) for i, j, _ in similar_pairs(vecs, threshold) if same_content(items[i].text, items[j].text, texts)]
    if hasattr(store, "neighbors"):
        for it in items:
            for other, _, _ in store.neighbors(it.id, namespace, edge_types=NEIGHBOUR_EDGES):
                j = index.get(other)
                if j is not None and float(vecs[index[it.id]] @ vecs[j]) >= neighbour_threshold:
                    pairs.append((index[it.id], j))
    groups = linked_components(len(items), [(i, j) for i, j in pairs if items[i].kind == items[j].kind])
    out = []
    for g in groups:
        if len(g) < 2:
            continue
        c = g[medoid(vecs[g])]
        out.append(sorted(sorted(g, key=lambda k: (-float(vecs[c] @ vecs[k]), k))[:max_size]))
    return sorted(out, key=lambda g: (-len(g), g[0]))


def generalise_groups(manager: Any, store: Any, namespace: str, budget: int) -> None:
    """Each group becomes one generalised node (LM: `GeneraliseMemories`; LM-free: the medoid's
    text, the statement closest to all of them) that stands for every member."""
    items = store.list(namespace)
    if len(items) < 2:
        return
    vecs = store.vectors(items)
    for g in neighbourhoods(store, namespace, items, vecs, manager.budget_merge_threshold,
                            manager.neighbour_threshold, manager.generalise_max):
        if active_words(store, namespace) <= budget:
            return
        members = [items[i] for i in g]
        before = sum(item_words(m, store.resources.texts) for m in members)
        text = lm_text(manager, members, before - 1) or members[medoid(vecs[g])].text
        if count_words(text) >= before:
            continue
        item = combined_item(members, text, members[0].kind, namespace, how="generalised",
                             fields={"generalised_from": [m.id for m in members]})
        manager.replace(members, item, store, f"budget: {len(members)} related memories generalised "
                                              f"into one ({before} -> {count_words(text)} words)")
        manager.budget_stats["generalised"] += len(members)


"""Consolidation passes over a namespace: clusters of similar memories, merged into their best
member (json_full's cluster merge, graph_consolidate's merge) or generalised into one new memory
that holds across episodes (graph_consolidate)."""
from __future__ import annotations

import hashlib
from typing import Any, Callable

import numpy as np

from memarch.modules.managers._conflicts import keys_compatible, opposite_outcomes
from memarch.modules.managers._content import same_content
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.text_caches import TextCaches

_BLOCK = 512  # rows of the similarity matrix computed at a time (memory stays O(block x n))


def similar_pairs(vecs: np.ndarray, threshold: float) -> list[tuple[int, int, float]]:
    """Index pairs (i < j) with cosine >= ``threshold`` (rows are unit vectors)."""
    out: list[tuple[int, int, float]] = []
    for start in range(0, len(vecs), _BLOCK):
        sims = vecs[start:start + _BLOCK] @ vecs.T
        rows, cols = np.nonzero(sims >= threshold)
        for r, c in zip(rows.tolist(), cols.tolist()):
            i = start + r
            if i < c:
                out.append((i, c, float(sims[r, c])))
    return out


def linked_components(n: int, pairs: list[tuple[int, int]]) -> list[list[int]]:
    """Connected components of ``n`` nodes linked by ``pairs`` (union-find with path halving), each
    in index order, in order of their first node."""
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in pairs:
        parent[find(i)] = find(j)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(find(i), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])


def _compatible(a: MemoryItem, b: MemoryItem, cross_type: bool, content: bool, texts: TextCaches | None) -> bool:
    return (cross_type or a.kind == b.kind) and keys_compatible(a, b) and not opposite_outcomes(a, b) \
        and (not content or same_content(a.text, b.text, texts))


def clusters(items: list[MemoryItem], vecs: np.ndarray, threshold: float, *,
             cross_type: bool = False, max_size: int | None = None, content: bool = True,
             texts: TextCaches | None = None) -> list[list[int]]:
    """Groups of similar, mutually compatible items (same kind unless ``cross_type``, one key at
    most, no opposite outcomes, and — for a merge, ``content`` — the same content words, see
    `_content.same_content`, every pair of the group: the survivor is chosen later, so each must
    be able to absorb every other), largest first, each of 2+ items. A generalisation
    (``content=False``) groups different facts on purpose: it adds a memory and removes none.

    Linked components (union-find over pairs above ``threshold``) would chain A~B~C into one
    group with A and C unrelated; so each component is cut down to a star: its medoid and the
    members within ``threshold`` of it (the ``max_size`` nearest). The rest wait for a later pass.
    ``texts``: whose memos keep the texts' content words (the store's `Resources.texts`).
    """
    pairs = [(i, j) for i, j, _ in similar_pairs(vecs, threshold)
             if _compatible(items[i], items[j], cross_type, content, texts)]
    components = linked_components(len(items), pairs)
    out = []
    for comp in components:
        if len(comp) < 2:
            continue
        sims = vecs[comp] @ vecs[comp].T
        c = int(np.argmax(sims.sum(axis=1)))
        center = items[comp[c]]
        order = sorted(range(len(comp)), key=lambda k: (-sims[c, k], comp[k]))
        star, key = [], center.key
        for k in order:
            it = items[comp[k]]
            if k != c and (sims[c, k] < threshold or not _compatible(center, it, cross_type, content, texts)):
                continue
            # Same content is not transitive (a word of the centre may be a content word of one
            # member and absent from another): for a merge, every member must match every other.
            if content and any(not same_content(items[s].text, it.text, texts) for s in star):
                continue
            if it.key is not None and key is not None and it.key != key:
                continue
            key = key or it.key
            star.append(comp[k])
        star = star[:max_size] if max_size else star
        if len(star) > 1:
            out.append(sorted(star))
    return sorted(out, key=lambda g: (-len(g), g[0]))


def merge_cluster(manager: Any, members: list[MemoryItem], store: Any,
                  utility: Callable[[MemoryItem], float]) -> MemoryItem:
    """Keep the most useful member (ties: the earliest written); the others become tombstones
    superseded by it, their provenance, usage and texts folded into it (``merged_from`` in the
    lineage with ``data.absorbed`` = {id: text}, and in ``fields``)."""
    keep = max(members, key=lambda it: (utility(it), -members.index(it)))
    others = [m for m in members if m is not keep]
    at = manager.at(store, keep.namespace, keep.event_time)
    for m in others:
        keep.source_ids = list(dict.fromkeys(keep.source_ids + m.source_ids))
        keep.usage.retrieved += m.usage.retrieved
        keep.usage.helped_success += m.usage.helped_success
        keep.usage.helped_failure += m.usage.helped_failure
        keep.usage.strength = max(keep.usage.strength, m.usage.strength)
        store.delete(m.id, m.namespace, reason=f"merged into {keep.id} (cluster merge)", actor=manager.actor,
                     at=at, status="superseded", related=[keep.id])
    keep.fields["merged_from"] = list(dict.fromkeys(keep.fields.get("merged_from", []) + [m.id for m in others]))
    keep.log("merged_from", manager.actor, f"cluster of {len(members)} similar memories",
             [m.id for m in others], at, episodes=sorted({m.episode_id for m in others if m.episode_id}),
             absorbed={m.id: m.text for m in others})
    store.update(keep)
    return keep


def medoid(vecs: np.ndarray) -> int:
    """The member most similar to all the others: the LM-free "general" statement of a cluster."""
    return int(np.argmax((vecs @ vecs.T).sum(axis=1)))


def general_item(members: list[MemoryItem], text: str, namespace: str) -> MemoryItem:
    """A new memory that holds across the members' episodes (kept alongside them)."""
    ids = sorted(m.id for m in members)
    episodes = sorted({m.episode_id for m in members if m.episode_id})
    outcomes = {m.outcome for m in members}
    item = MemoryItem(
        text=text, kind=members[0].kind, namespace=namespace,
        id=f"{members[0].kind}-general-" + hashlib.sha1("\x1f".join(ids).encode()).hexdigest()[:12],
        fields={"generalised": True, "generalised_from": ids, "episodes": episodes},
        source_ids=ids, outcome=outcomes.pop() if len(outcomes) == 1 else "unknown",
        event_time=max((m.event_time for m in members if m.event_time), default=None),
    )
    return item

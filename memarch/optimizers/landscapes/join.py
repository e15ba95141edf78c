"""Joining landscapes built apart (the units of one build, or the shards of several processes or
machines) into one: the same build settings and question table, disjoint architectures."""
from __future__ import annotations

import logging
from typing import Any

import numpy as np

from memarch.optimizers.landscapes.table import NONE, QUERY_ARRAYS, Landscape
from memarch.errors import MemarchError

# What may differ between parts of one landscape: how and where each was built, and its rows.
PER_PART = ("build", "groups", "complete", "missing")
ROW_PREFIXES = ("score_", "cost_")
ROW_ARRAYS = ("keys", "group", "loss_stage")

logger = logging.getLogger(__name__)


def settings(meta: dict[str, Any]) -> dict[str, Any]:
    """The part of ``meta`` every part of one landscape must share."""
    return {k: v for k, v in meta.items() if k not in PER_PART}


def _is_row(name: str) -> bool:
    return name in ROW_ARRAYS or name.startswith(ROW_PREFIXES)


def check_compatible(first: Landscape, other: Landscape) -> None:
    """Raise a one-line MemarchError when ``other`` cannot join ``first``."""
    a, b = settings(first.meta), settings(other.meta)
    where = other.path or "a part"
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            raise MemarchError(f"{where}: incompatible with {first.path or 'the first part'}: "
                               f"'{k}' differs (built with other settings)")
    for name in QUERY_ARRAYS + tuple(f"has_{o}" for o in first.metrics):
        if not np.array_equal(first.arrays[name], other.arrays[name]):
            raise MemarchError(f"{where}: incompatible with {first.path or 'the first part'}: "
                               f"the question table differs ({name})")


def _sum_stats(parts: list[dict]) -> dict[str, float]:
    out: dict[str, float] = {}
    for stats in parts:
        for k, v in stats.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out[k] = out.get(k, 0) + v
    return out


def join(parts: list[Landscape], *, build: dict[str, Any] | None = None) -> Landscape:
    """One landscape from ``parts``: rows sorted by key (the no-memory row first), shared-evaluation
    groups renumbered in row order, build statistics summed, missing planned architectures listed."""
    if not parts:
        raise MemarchError("nothing to join: no landscape parts")
    first = parts[0]
    seen: dict[str, str] = {}
    for part in parts:
        check_compatible(first, part)
        for k in part.keys:
            if k in seen:
                raise MemarchError(f"{part.path or 'a part'}: architecture {k} is also in {seen[k]} "
                                   "(parts must be disjoint)")
            seen[k] = part.path or "another part"
    rows = [(k, p, i) for p in parts for i, k in enumerate(p.keys)]
    rows.sort(key=lambda r: (r[0] != NONE, r[0]))
    arrays = {name: arr for name, arr in first.arrays.items() if not _is_row(name)}
    for name in first.arrays:
        if name.startswith("cost_") and any(name not in p.arrays for p in parts):
            # a part built before this cost was measured (e.g. memory_words_max_ns): shown, not joined
            logger.warning("join: %s is missing from some parts (built by an older memarch); left out", name)
            continue
        if _is_row(name) and name != "group":
            arrays[name] = np.stack([p.arrays[name][i] for _, p, i in rows]) if rows else first.arrays[name][:0]
    # Groups: (part, local id) -> new id, in order of first appearance.
    renumber: dict[tuple[int, int], int] = {}
    part_no = {id(p): n for n, p in enumerate(parts)}
    group = np.empty(len(rows), dtype=np.int32)
    for j, (_, p, i) in enumerate(rows):
        local = (part_no[id(p)], int(p.arrays["group"][i]))
        group[j] = renumber.setdefault(local, len(renumber))
    arrays["group"] = group
    groups: list[dict] = [{}] * len(renumber)
    for n, p in enumerate(parts):
        for g in p.meta.get("groups", []):
            if (n, g["id"]) in renumber:
                groups[renumber[(n, g["id"])]] = {**g, "id": renumber[(n, g["id"])]}
    planned = first.meta.get("planned") or []
    missing = sorted(set(planned) - set(seen))
    builds = [p.meta.get("build", {}) for p in parts]
    meta = {**settings(first.meta), "groups": groups, "complete": not missing, "missing": missing,
            "build": {**(build or {}), "parts": len(parts),
                      "sharing": _sum_stats([b.get("sharing", {}) for b in builds]),
                      "part_wall_s": round(sum(b.get("wall_s", 0.0) for b in builds), 3),
                      "commits": sorted({b["commit"] for b in builds if b.get("commit")})}}
    return Landscape(meta, arrays)

"""Levers in a landscape: each categorical architecture also read at a few values of some
retriever knobs (``landscape build --levers "retrieve.pack=0,1;retrieve.time_weight=0,1"``), so the
landscape covers the space with the levers that move quality (issue 23: packing, time-aware,
recency), and a replay searches it as a space of categorical choices plus those levels.

Only retriever knobs qualify: reads never change memory, so every level of a retriever is read from
the write pass its architecture shares (unit.py), and a lever multiplies reads, not writes. The
default level of each knob is the architecture as it is, so the presets stay as published.

Example::

    levels = parse_levers("retrieve.pack=0,1;retrieve.pack_compact=0,1")
    with_levers([memp], levels, ArchitectureSpace("conversation", lm_available=False))
    # memp, memp|retrieve.pack=1, memp|retrieve.pack_compact=1, memp|retrieve.pack=1,retrieve.pack_compact=1
"""
from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from memarch.errors import MemarchError
from memarch.optimizers.search.param_space import ParamSpace

if TYPE_CHECKING:
    from memarch.pipeline.architecture import Architecture
    from memarch.pipeline.space import ArchitectureSpace


def parse_levers(text: str | None) -> dict[str, tuple]:
    """``"retrieve.pack=0,1;retrieve.time_weight=0,1"`` -> ``{"retrieve.pack": (0, 1), ...}``
    (numbers as written: ``1`` an int, ``0.5`` a float; knob kinds are checked by `lever_space`)."""
    out: dict[str, tuple] = {}
    for part in (text or "").split(";"):
        part = part.strip()
        if not part:
            continue
        key, eq, values = part.partition("=")
        key = key.strip()
        if not eq or not key or not values.strip():
            raise MemarchError(f"lever {part!r}: expected KNOB=V1,V2 (e.g. retrieve.pack=0,1)")
        if key in out:
            raise MemarchError(f"lever {key} is given twice")
        try:
            nums = [float(v) if any(c in v for c in ".eE") else int(v) for v in
                    (x.strip() for x in values.split(",")) if v]
        except ValueError:
            raise MemarchError(f"lever {key}: levels must be numbers, not {values.strip()!r}") from None
        if len(set(nums)) < 2:
            raise MemarchError(f"lever {key}: give at least two distinct levels, not {values.strip()!r}")
        out[key] = tuple(sorted(set(nums)))
    return out


def lever_space(space: "ArchitectureSpace", levels: dict[str, Any]) -> ParamSpace:
    """The `ParamSpace` of a landscape with levers; one clear error for a knob no retriever has,
    a knob of another role, the program's ``top_k``, a value out of range or levels without the default."""
    for key in levels:
        if not key.startswith("retrieve."):
            raise MemarchError(f"lever {key}: only retriever knobs (retrieve.*) can be levers — a read "
                               "never changes memory, so their levels share one write pass")
        if key == "retrieve.top_k":
            raise MemarchError("lever retrieve.top_k: the program's items per read is the landscape's "
                               "setting (--context-budget), not a lever")
    return ParamSpace(space, "full", levels=levels)


def with_levers(archs: list["Architecture"], levels: dict[str, Any], space: "ArchitectureSpace") -> list["Architecture"]:
    """Every architecture at every combination of the levels its retriever declares (the
    all-default combination is the architecture itself), in input order, without duplicates."""
    ps = lever_space(space, levels)
    out: dict[str, "Architecture"] = {}
    for arch in archs:
        if arch.params:
            raise MemarchError(f"{arch.key()}: a landscape with levers starts from architectures without knobs")
        params = ps.to_params(arch)
        chosen = ps.chosen_knobs(params)
        for combo in itertools.product(*(ps.levels[key] for _, key, _ in chosen)):
            variant = ps.from_params({**params, **{name: v for (name, _, _), v in zip(chosen, combo)}}).canonical()
            out.setdefault(variant.key(), variant)
    return list(out.values())


def grid_size(levels: dict[str, Any]) -> int:
    """Combinations of the levels (an architecture whose retriever declares them all has this many rows)."""
    n = 1
    for values in levels.values():
        n *= len(values)
    return n

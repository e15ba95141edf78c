"""How compile picks its program from what validation measured: ``--select quality`` (the best
quality; exact ties to lower memory_words, then read_p95), ``knee`` (the knee of the validation
Pareto front, see `pareto.knee`) or a cost limit such as ``"memory_words<=5000"`` (the best
quality among the architectures within it)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from memarch.errors import MemarchError
from memarch.optimizers.search.pareto import knee, non_dominated
from memarch.optimizers.search.objectives import COSTS, QUALITY, TIE_BREAK, UNITS

_LIMIT = re.compile(r"^\s*([a-z_0-9]+)\s*<=\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*$")


@dataclass(frozen=True)
class Selection:
    """A parsed ``--select``.

    Example::

        sel = parse_selection("memory_words<=5000", ("quality", "memory_words"))
        sel.kind, sel.cost, sel.limit      # ("limit", "memory_words", 5000.0)

    Args:
        kind: ``quality``, ``knee`` or ``limit``.
        cost: the limited cost (``limit`` only): memory_words, read_p95, write_s or lm_tokens.
        limit: its largest allowed value on validation.
    """

    kind: str = "quality"
    cost: str = ""
    limit: float = 0.0

    def describe(self) -> str:
        if self.kind == "limit":
            return f"best quality with {self.cost} <= {self.limit:g}"
        if self.kind == "knee":
            return "knee of the validation Pareto front"
        return "best quality (ties broken by lower " + ", then ".join(TIE_BREAK) + ")"


QUALITY_SELECTION = Selection()


def parse_selection(text: str | None, objectives: Sequence[str]) -> Selection:
    """``quality`` | ``knee`` | ``COST<=N``; a MemarchError (one line) for anything else, and for
    ``knee`` in a study with one objective (a front needs at least two)."""
    if text is None or text.strip() == QUALITY:
        return QUALITY_SELECTION
    if text.strip() == "knee":
        if len(objectives) < 2:
            raise MemarchError("--select knee needs a front: give at least two --objectives "
                               "(e.g. --objectives quality,memory_words)")
        return Selection("knee")
    m = _LIMIT.match(text)
    cost = m.group(1) if m is not None else None
    if cost not in COSTS:
        raise MemarchError(f"--select {text!r}: expected quality, knee or COST<=N with COST one of "
                           f"{', '.join(COSTS)} (e.g. memory_words<=5000)")
    return Selection("limit", cost, float(m.group(2)))


def select(candidates: dict[str, dict[str, float]], objectives: Sequence[str], selection: Selection,
           search_quality: dict[str, float] | None = None) -> tuple[str, list[str]]:
    """(the pick, the validation front) among ``candidates`` (architecture key -> every objective's
    value on validation: quality and each cost of `COSTS`).

    With one objective the front is the candidates themselves. Ties of quality go to lower
    memory_words, then read_p95, then the better search quality, then the key. A limit no
    candidate satisfies is a MemarchError naming the cheapest.
    """
    if not candidates:
        raise MemarchError("no architecture could be scored on validation")
    search_quality = search_quality or {}
    keys = sorted(candidates)
    if selection.kind == "limit":
        within = [k for k in keys if candidates[k][selection.cost] <= selection.limit]
        if not within:
            cheapest = min(keys, key=lambda k: candidates[k][selection.cost])
            raise MemarchError(f"--select {selection.cost}<={selection.limit:g}: no candidate on validation is "
                               f"within it (the cheapest, {cheapest}, has {candidates[cheapest][selection.cost]:g}"
                               f"{UNITS[selection.cost]})")
        keys = within
    if len(objectives) > 1:
        points = [tuple(candidates[k][n] for n in objectives) for k in keys]
        front = [keys[i] for i in non_dominated(points)]
    else:
        front = list(keys)

    def best_quality(k: str) -> tuple:
        v = candidates[k]
        return (-v[QUALITY], *(v[n] for n in TIE_BREAK), -search_quality.get(k, 0.0), k)

    front.sort(key=best_quality)
    if selection.kind == "knee":
        pick = front[knee([tuple(candidates[k][n] for n in objectives) for k in front])]
    else:
        pick = front[0]
    return pick, front

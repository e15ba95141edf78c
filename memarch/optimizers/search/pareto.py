"""The one Pareto module: dominance, non-dominated sorting, an exact hypervolume over normalised
objectives and the knee of a front, on points — tuples of objective values in study order, quality
first (higher is better), then costs (lower is better) — and the fronts of evaluated trial records
built on them (over (score, cost), or over a multi-objective study's own objectives)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from memarch.optimizers.search.objectives import values_of

if TYPE_CHECKING:
    from memarch.optimizers.search.history import TrialRecord

Point = Sequence[float]
MARGIN = 0.1  # the reference point's costs: the largest observed cost plus 10%


def loss(point: Point) -> tuple[float, ...]:
    """The point with every objective minimised (quality negated)."""
    return (-float(point[0]), *map(float, point[1:]))


def dominates(a: Point, b: Point) -> bool:
    """``a`` is at least as good as ``b`` on every objective and better on one."""
    la, lb = loss(a), loss(b)
    return all(x <= y for x, y in zip(la, lb)) and any(x < y for x, y in zip(la, lb))


def non_dominated(points: Sequence[Point]) -> list[int]:
    """Indices of the points no other point dominates (equal points are all kept), in input order.

    Example::

        non_dominated([(0.8, 100), (0.7, 50), (0.6, 80)])   # [0, 1]
    """
    return [i for i, p in enumerate(points) if not any(dominates(q, p) for j, q in enumerate(points) if j != i)]


def non_dominated_sort(points: Sequence[Point]) -> list[list[int]]:
    """Fronts of indices: the first is non-dominated, the second is non-dominated once the first
    is removed, and so on (NSGA-II's ranking)."""
    left = list(range(len(points)))
    fronts: list[list[int]] = []
    while left:
        front = [left[i] for i in non_dominated([points[j] for j in left])]
        fronts.append(front)
        left = [i for i in left if i not in set(front)]
    return fronts


def reference_point(points: Sequence[Point], margin: float = MARGIN) -> tuple[float, ...]:
    """The hypervolume reference for a set of runs compared together: quality 0, and each cost at
    its largest value over ``points`` (every point of every run) plus ``margin``; a cost that is 0
    everywhere gets 1 (it then separates nothing)."""
    if not points:
        raise ValueError("no points to take a reference from")
    dims = len(points[0])
    top = [max(float(p[d]) for p in points) for d in range(1, dims)]
    return (0.0, *[(t * (1 + margin)) if t > 0 else 1.0 for t in top])


def normalise(point: Point, reference: Point) -> tuple[float, ...]:
    """Losses in [0, 1] (1 = the reference): 1 - quality (quality clipped to [0, 1]), and each
    cost divided by the reference's."""
    q = min(1.0, max(0.0, float(point[0])))
    return (1.0 - q, *[float(c) / float(r) for c, r in zip(point[1:], reference[1:])])


def hypervolume(points: Sequence[Point], reference: Point) -> float:
    """The normalised hypervolume of ``points`` (objective values, quality first): the share of the
    unit box between the ideal (quality 1, zero costs) and ``reference`` that the points dominate.
    1 would be a perfect, free architecture; a point at or beyond the reference adds nothing.

    Example::

        ref = reference_point(all_points)
        hypervolume(front, ref)
    """
    losses = [normalise(p, reference) for p in points]
    return exact_hypervolume(losses, (1.0,) * len(reference))


def exact_hypervolume(losses: Sequence[Point], reference: Point) -> float:
    """The volume (every objective minimised) dominated by ``losses`` and bounded by ``reference``:
    a sweep in 2-D, slicing along the last objective above (exact; fine for fronts of tens)."""
    pts = [tuple(map(float, p)) for p in losses if all(x < r for x, r in zip(p, reference))]
    if not pts:
        return 0.0
    if len(reference) == 1:
        return float(reference[0]) - min(p[0] for p in pts)
    if len(reference) == 2:
        volume, best_y = 0.0, float(reference[1])
        for x, y in sorted(pts):
            if y < best_y:
                volume += (reference[0] - x) * (best_y - y)
                best_y = y
        return volume
    pts.sort(key=lambda p: p[-1])
    volume = 0.0
    for i, p in enumerate(pts):
        top = pts[i + 1][-1] if i + 1 < len(pts) else float(reference[-1])
        if top > p[-1]:
            volume += (top - p[-1]) * exact_hypervolume([q[:-1] for q in pts[:i + 1]], reference[:-1])
    return volume


def knee(points: Sequence[Point]) -> int:
    """Index of the knee of a front: each objective scaled to [0, 1] over the front (as losses),
    the point farthest from the line between the two extremes — in 2-D that line joins (0, 1) and
    (1, 0), so the knee is the point with the smallest sum of scaled losses; above 2-D the same
    sum (the distance from the plane through the unit points). Ties (and fronts of one or two
    points, where every point lies on the line) go to the higher quality.

    Example::

        knee([(0.9, 900), (0.85, 200), (0.5, 100)])   # 1: almost the best quality at a fifth of the memory
    """
    if not points:
        raise ValueError("knee of an empty front")
    losses = [loss(p) for p in points]
    lo = [min(col) for col in zip(*losses)]
    hi = [max(col) for col in zip(*losses)]
    scaled = [sum((x - a) / (b - a) if b > a else 0.0 for x, a, b in zip(p, lo, hi)) for p in losses]
    return min(range(len(points)), key=lambda i: (round(scaled[i], 12), -float(points[i][0]), i))


def pareto_front(records: list["TrialRecord"]) -> list["TrialRecord"]:
    """Records no other dominates on (score, cost), best score first; one per architecture.

    Example::

        front = pareto_front(history.records)
        [(r.architecture.key(), r.score, r.cost) for r in front]
    """
    unique: dict[str, "TrialRecord"] = {}
    for r in records:
        k = r.architecture.key()
        if k not in unique or r.score > unique[k].score:
            unique[k] = r
    pool = list(unique.values())
    front = [r for r in pool if not any(dominates((o.score, o.cost), (r.score, r.cost))
                                        for o in pool if o is not r)]
    return sorted(front, key=lambda r: (-r.score, r.cost, r.number))


def objective_front(records: list["TrialRecord"], objectives: Sequence[str]) -> list["TrialRecord"]:
    """Records no other record dominates on ``objectives`` (quality first, costs after, as the
    study measures them), best quality first, then cheapest.

    Example::

        objective_front(history.records, ("quality", "memory_words"))
    """
    values = [values_of(r.result, objectives) for r in records]
    front = [(records[i], values[i]) for i in non_dominated(values)]
    return [r for r, v in sorted(front, key=lambda rv: (-rv[1][0], *rv[1][1:], rv[0].number))]

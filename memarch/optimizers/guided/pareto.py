"""The Pareto front of evaluated architectures over (objective: higher is better, cost: lower)."""
from __future__ import annotations

from memarch.optimizers.history import TrialRecord


def dominates(a: TrialRecord, b: TrialRecord) -> bool:
    return (a.objective >= b.objective and a.cost <= b.cost) and (a.objective > b.objective or a.cost < b.cost)


def pareto_front(records: list[TrialRecord]) -> list[TrialRecord]:
    """Non-dominated records, best objective first; one record per architecture.

    Example::

        front = pareto_front(history.records)
        [(r.architecture.key(), r.objective, r.cost) for r in front]
    """
    unique: dict[str, TrialRecord] = {}
    for r in records:
        k = r.architecture.key()
        if k not in unique or r.objective > unique[k].objective:
            unique[k] = r
    pool = list(unique.values())
    front = [r for r in pool if not any(dominates(o, r) for o in pool if o is not r)]
    return sorted(front, key=lambda r: (-r.objective, r.cost, r.number))

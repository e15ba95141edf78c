"""The Pareto front of evaluated architectures over (objective: higher is better, cost: lower), or
in a multi-objective study over the study's own objectives (quality and the costs it minimises)."""
from __future__ import annotations

from typing import Sequence

from memarch.optimizers.history import TrialRecord
from memarch.optimizers.pareto import non_dominated
from memarch.optimizers.study_objectives import values_of


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


def objective_front(records: list[TrialRecord], objectives: Sequence[str]) -> list[TrialRecord]:
    """Records no other record dominates on ``objectives`` (quality first, costs after, as the
    study measures them), best quality first, then cheapest.

    Example::

        objective_front(history.records, ("quality", "memory_tokens"))
    """
    values = [values_of(r.result, objectives) for r in records]
    front = [(records[i], values[i]) for i in non_dominated(values)]
    return [r for r, v in sorted(front, key=lambda rv: (-rv[1][0], *rv[1][1:], rv[0].number))]

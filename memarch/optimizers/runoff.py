"""The runoff: the search's best architectures (or its Pareto front) re-scored on validation, and
the pick chosen there (AutoMem picks on validation, never on the search split or test)."""
from __future__ import annotations

from typing import Any

from memarch.optimizers.search.champion import select_champion
from memarch.optimizers.search.pareto import objective_front
from memarch.optimizers.search.history import History
from memarch.optimizers.evaluators.base import Evaluator, EvaluatorFunction
from memarch.optimizers.search.settings import DEFAULT_FINALISTS
from memarch.optimizers.search.selection import QUALITY_SELECTION, Selection
from memarch.optimizers.search.selection import select as select_pick
from memarch.optimizers.search.objectives import NAMES, SINGLE, value_of, values_of
from memarch.pipeline.architecture import Architecture

MAX_FRONT_FINALISTS = 8  # search front members re-scored on validation in a multi-objective study


def choose_on_validation(history: History, evaluator: Evaluator | EvaluatorFunction, valset: Any,
                         finalists: int = DEFAULT_FINALISTS, *,
                         objectives: tuple[str, ...] = SINGLE, selection: Selection = QUALITY_SELECTION,
                         details: dict[str, Any] | None = None) -> tuple[Architecture, dict[str, float | None]]:
    """The top search architectures plus the guarded champion — or, with several objectives, the
    search Pareto front (at most `MAX_FRONT_FINALISTS`, spread over it) — re-scored on validation
    (AutoMem's runoff); ``selection`` picks among them on validation (`select`: best quality, ties
    to lower memory_words then read_p95; the knee; or the best quality within a cost limit).

    Example::

        pick, scores = choose_on_validation(history, evaluator, "validation", finalists=3)

    ``details`` (a dict, filled when given): each finalist's validation values of every objective,
    the validation front and the search front, and the errors of finalists whose validation
    evaluation failed (``validation_failed``; their score is None — never a 0.0 — and they
    cannot be picked).
    """
    if len(objectives) > 1:
        front = objective_front(history.records, objectives)
        if len(front) > MAX_FRONT_FINALISTS:  # evenly spaced from best quality to cheapest
            step = (len(front) - 1) / (MAX_FRONT_FINALISTS - 1)
            front = [front[round(i * step)] for i in range(MAX_FRONT_FINALISTS)]
        keys = [r.architecture.key() for r in front]
    else:
        ranked = sorted(history.records, key=lambda r: (-r.score, r.cost, r.number))
        keys = []
        for r in [select_champion(history)] + ranked:
            if r is not None and r.architecture.key() not in keys:
                keys.append(r.architecture.key())
            if len(keys) >= max(1, finalists):
                break
    scores: dict[str, float | None] = {}
    values: dict[str, dict[str, float]] = {}
    failed: dict[str, str] = {}
    for key in keys:
        rec = history.by_key(key)
        res = rec.result if valset is None else evaluator(rec.architecture, valset)
        scores[key] = None if res.failed else res.score
        if res.failed:
            failed[key] = str(res.error)[:300]
        else:
            values[key] = {n: value_of(res, n) for n in NAMES}
    pick, val_front = select_pick(values, objectives, selection,
                             {k: history.by_key(k).score for k in keys})
    if details is not None:
        details.update(validation_values=values, validation_front=val_front, validation_failed=failed,
                       search_front={k: list(values_of(history.by_key(k).result, objectives)) for k in keys}
                       if len(objectives) > 1 else {})
    return history.by_key(pick).architecture, scores

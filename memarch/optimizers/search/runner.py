"""`Search`: one worker of a study — ``study.optimize`` with memarch's trial function and stop rules,
until the study holds ``budget`` distinct evaluated architectures. Any number of workers can share
a study; invalid draws and repeats are shown and never counted; N failed trials in a row stop it.
It runs with the compile's `SearchSettings`, carried down as one object."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Protocol

import optuna

from memarch.errors import MemarchError
from memarch.optimizers.search.callbacks import StopAtBudget, StopOnFailures, StopWhenStuck
from memarch.optimizers.search.history import History
from memarch.optimizers.evaluators.base import Evaluator, EvaluatorFunction
from memarch.optimizers.search.trial_function import TrialFunction, TrialFailed, distinct_taken
from memarch.optimizers.search.study import fail_stale
from memarch.optimizers.search.settings import SearchSettings
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.trial import TrialResult

if TYPE_CHECKING:
    from memarch.optimizers.search.param_space import ParamSpace

logger = logging.getLogger(__name__)

__all__ = ["Search", "StudyStopped", "TrialFailed"]


class SearchTracker(Protocol):
    """What a search asks of its tracker (`memarch.optimizers.tracking.Tracker`): one Optuna
    callback that logs each finished trial."""

    def callback(self, search: "Search") -> Callable[..., None]: ...


class StudyStopped(MemarchError):
    """The study stopped before its budget (consecutive failures, a stuck strategy)."""


class Search:
    """Run trials on ``study`` (its sampler is the strategy) until ``budget`` distinct architectures
    are evaluated.

    Example::

        study = optuna.create_study(direction="maximize", sampler=make_sampler("guided", space))
        search = Search(evaluator, space, SearchSettings(budget=20), data="search")
        history = search.run(study)
        search.stats()   # {"evaluated": 20, "invalid": 1, "repeats": 0, "failed": 0, ...}
        Search(evaluator, space, budget=20, pruner="sha")   # settings by name work too

    Args:
        evaluator: an `Evaluator` (or a plain ``function(architecture, data) -> TrialResult``).
        space: the `ParamSpace`.
        settings: the `SearchSettings` it reads — ``budget`` (distinct evaluated architectures the
            study should hold; with a pruner, full-evaluation equivalents: a trial pruned after 2 of
            5 dialogues costs 0.4), ``max_failures``, ``stuck_limit``, ``objectives`` (the study
            must have one direction per objective: `open_study` creates it so) and ``pruner`` (the
            study's pruner must be ``make_pruner(pruner)``); ``setting_changes`` are changes to it by
            name.
        data: what the evaluator scores on (a split name such as ``"search"``).
        tracker: optional MLflow tracker (a nested run per trial, counts on the parent).
        on_trial: called with (trial number, architecture, result) after each evaluation.
        callbacks: more Optuna callbacks, called after each trial (a replay's `Snap`).
    """

    def __init__(self, evaluator: Evaluator | EvaluatorFunction, space: "ParamSpace", settings: SearchSettings | None = None, *,
                 data: Any = "search", tracker: SearchTracker | None = None,
                 on_trial: Callable[[int, Architecture, TrialResult], None] | None = None,
                 callbacks: list[Callable[..., None]] | None = None, **setting_changes: Any):
        self.settings = SearchSettings.of(settings, **setting_changes)
        self.space = space
        self.callbacks = list(callbacks or [])
        self.tracker = tracker
        self.trial_function = TrialFunction(evaluator, space, self.settings, data=data, on_result=on_trial)
        self.rules = [StopAtBudget(self.budget), StopOnFailures(self.settings.max_failures),
                      StopWhenStuck(self.settings.stop_when_stuck)]
        self.stop_reason: str | None = None

    @property
    def budget(self) -> int:
        return self.settings.budget

    @property
    def objectives(self) -> tuple[str, ...]:
        return self.settings.objectives

    @property
    def pruner(self) -> str:
        return self.settings.pruner

    @property
    def invalid(self) -> list[tuple[int, str, str]]:
        return self.trial_function.invalid

    def run(self, study: optuna.Study) -> History:
        """Optimise until the budget (or a stop rule); returns the study's distinct history.

        Raises `StudyStopped` when a stop rule other than the budget ended the study."""
        if len(study.directions) != len(self.objectives):
            raise MemarchError(f"study {study.study_name} has {len(study.directions)} direction(s) but the search "
                               f"has {len(self.objectives)} objective(s) ({', '.join(self.objectives)})")
        fail_stale(study)
        if distinct_taken(study) < self.budget:
            callbacks: list[Any] = [self._heartbeat, *self.callbacks, *self.rules]
            if self.tracker is not None:
                callbacks.append(self.tracker.callback(self))
            study.optimize(self.trial_function, n_trials=None, catch=(TrialFailed,), callbacks=callbacks,
                           gc_after_trial=False)
        fired = [r.reason for r in self.rules if r.reason]
        self.stop_reason = fired[0] if fired else None
        if fired and not self.rules[0].reason:
            raise StudyStopped(f"study {study.study_name} stopped: {fired[0]}")
        return History.from_study(study)

    @staticmethod
    def _heartbeat(study: optuna.Study, trial: Any) -> None:
        fail_stale(study)  # a killed worker's trial is failed and re-queued

    def stats(self) -> dict[str, int]:
        """What this worker's trials did: evaluated, invalid, repeats, failed (plus the sampler's own)."""
        o = self.trial_function
        out = {"evaluated": len(o.evaluated), "invalid": len(o.invalid), "repeats": len(o.repeats),
               "failed": len(o.failures)}
        if self.pruner != "none":
            out["pruned"] = len(o.pruned)
            out["unstaged"] = o.unstaged  # trials the pruner could not stop (the evaluator has no instances)
        return out

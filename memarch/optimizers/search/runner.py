"""`Search`: one worker of a study — ``study.optimize`` with memarch's trial function and stop rules,
until the study holds ``budget`` distinct evaluated architectures. Any number of workers can share
a study; invalid draws and repeats are shown and never counted; N failed trials in a row stop it."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Protocol

import optuna

from memarch.errors import MemarchError
from memarch.optimizers.search.callbacks import StopAtBudget, StopOnFailures, StopWhenStuck
from memarch.optimizers.search.history import History
from memarch.optimizers.evaluators.base import Evaluator
from memarch.optimizers.search.trial_function import TrialFunction, Metric, TrialFailed, distinct_taken
from memarch.optimizers.search.study import fail_stale
from memarch.optimizers.search.objectives import SINGLE
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.deprecation import deprecated_attribute
from memarch.pipeline.trial import TrialResult

if TYPE_CHECKING:
    from memarch.optimizers.search.param_space import ParamSpace

logger = logging.getLogger(__name__)

__all__ = ["Metric", "Search", "StudyStopped", "TrialFailed"]


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
        search = Search(evaluator, space, budget=20, data="search")
        history = search.run(study)
        search.stats()   # {"evaluated": 20, "invalid": 1, "repeats": 0, "failed": 0, ...}

    Args:
        evaluator: an `Evaluator` (or a plain ``function(architecture, data) -> TrialResult``).
        space: the `ParamSpace`.
        budget: distinct evaluated architectures the study should hold (invalid draws, repeats and
            failed trials do not count).
        data: what the evaluator scores on (a split name such as ``"search"``).
        tracker: optional MLflow tracker (a nested run per trial, counts on the parent).
        on_trial: called with (trial number, architecture, result) after each evaluation.
        max_failures: consecutive failed trials that stop the study (0: never).
        stuck_limit: trials in a row that evaluate nothing new before the study is stopped
            (default 20 x budget + 100).
        objectives: ``("quality",)`` or quality and costs (`parse_objectives`); the study must
            have one direction per objective (`open_study` creates it so).
        callbacks: more Optuna callbacks, called after each trial (a replay's `Snap`).
        pruner: ``none`` or a `pruners.PRUNERS` name (the study's pruner must be
            ``make_pruner(pruner)``); with a pruner, ``budget`` counts full-evaluation equivalents
            (a trial pruned after 2 of 5 dialogues costs 0.4).
    """

    def __init__(self, evaluator: Evaluator | Metric, space: "ParamSpace", *, budget: int, data: Any = "search",
                 tracker: SearchTracker | None = None, on_trial: Callable[[int, Architecture, TrialResult], None] | None = None,
                 max_failures: int = 5, stuck_limit: int | None = None, objectives: tuple[str, ...] = SINGLE,
                 callbacks: list[Callable[..., None]] | None = None, pruner: str | None = "none"):
        self.space = space
        self.callbacks = list(callbacks or [])
        self.objectives = tuple(objectives)
        self.budget = int(budget)
        self.tracker = tracker
        self.trial_function = TrialFunction(evaluator, space, data=data, budget=self.budget, on_result=on_trial,
                                            objectives=self.objectives, pruner=pruner)
        self.pruner = self.trial_function.pruner
        self.rules = [StopAtBudget(self.budget), StopOnFailures(max_failures),
                      StopWhenStuck(stuck_limit or 20 * self.budget + 100)]
        self.stop_reason: str | None = None

    objective = deprecated_attribute("objective", "trial_function", "Search")

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

"""When a memarch study stops: Optuna callbacks for ``study.optimize`` — the budget of distinct
evaluated architectures, N consecutive failed trials, and a bound on trials that evaluate nothing
new (invalid draws, repeats). Each records why it stopped the study, for one clear line."""
from __future__ import annotations

import logging

import optuna
from optuna.trial import FrozenTrial, TrialState

from memarch.optimizers.search.history import FIDELITY_ATTR
from memarch.optimizers.search.history import REPEAT_ATTR
from memarch.optimizers.search.trial_function import distinct_taken

logger = logging.getLogger(__name__)


class StopRule:
    """Base: ``reason`` is set (and the study stopped) when the rule fires."""

    def __init__(self) -> None:
        self.reason: str | None = None

    def stop(self, study: optuna.Study, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
        study.stop()


class StopAtBudget(StopRule):
    """Stop once the study holds ``budget`` distinct evaluated architectures (over all workers).

    Example::

        study.optimize(trial_function, callbacks=[StopAtBudget(20)])
    """

    def __init__(self, budget: int):
        super().__init__()
        self.budget = int(budget)
        self._keys: dict[int, str] = {}

    def __call__(self, study: optuna.Study, trial: FrozenTrial) -> None:
        taken = distinct_taken(study, keys=self._keys)
        if taken >= self.budget:
            unit = "distinct architectures evaluated" if isinstance(taken, int) else "full evaluations spent"
            self.stop(study, f"budget reached: {self.budget} {unit}")


class StopOnFailures(StopRule):
    """Stop after ``limit`` consecutive failed trials of this worker (a dead LM endpoint, a broken
    dataset): one clear line instead of hundreds of failed trials.

    Example::

        rule = StopOnFailures(5)
        study.optimize(trial_function, callbacks=[rule], catch=(TrialFailed,))
        rule.reason  # "5 consecutive trials failed; last error: ..."
    """

    def __init__(self, limit: int = 5):
        super().__init__()
        self.limit = int(limit)
        self.run = 0

    def __call__(self, study: optuna.Study, trial: FrozenTrial) -> None:
        if trial.state == TrialState.FAIL:
            self.run += 1
            if self.limit and self.run >= self.limit:
                error = trial.user_attrs.get("error") or trial.system_attrs.get("fail_reason", "unknown error")
                self.stop(study, f"{self.run} consecutive trials failed; last error: {str(error).splitlines()[0][:300]}")
        elif trial.state == TrialState.COMPLETE:
            self.run = 0


class StopWhenStuck(StopRule):
    """Bound the trials that evaluate nothing new: ``limit`` in a row (invalid draws, repeats of
    evaluated architectures, trials pruned for the budget) stop the study — the sampler is asked
    again each time, but not forever.

    Example::

        study.optimize(trial_function, callbacks=[StopWhenStuck(200)])
    """

    def __init__(self, limit: int):
        super().__init__()
        self.limit = int(limit)
        self.run = 0

    def __call__(self, study: optuna.Study, trial: FrozenTrial) -> None:
        new = REPEAT_ATTR not in trial.user_attrs and (  # a pruned trial evaluated something new too
            trial.state == TrialState.COMPLETE or (trial.state == TrialState.PRUNED and FIDELITY_ATTR in trial.user_attrs))
        self.run = 0 if new or trial.state == TrialState.FAIL else self.run + 1
        if self.run >= self.limit:
            self.stop(study, f"{self.run} trials in a row evaluated nothing new (invalid or already "
                             "evaluated architectures): the strategy is stuck or the space is exhausted")

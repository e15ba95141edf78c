"""`Search`: one worker of a study — asks the strategy for proposals when the queue is empty,
enqueues them, and runs trials until the study holds ``budget`` evaluated architectures. Invalid
architectures are pruned and logged, never evaluated; any number of workers can share a study."""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Callable

import optuna
from optuna.trial import TrialState

from memarch.optimizers.history import ARCH_ATTR, RESULT_ATTR, History, compact
from memarch.optimizers.study import fail_stale
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.trial import TrialResult

if TYPE_CHECKING:
    from memarch.optimizers.space import SearchSpace
    from memarch.optimizers.strategies import Strategy
    from memarch.optimizers.tracking import Tracker

logger = logging.getLogger(__name__)

Metric = Callable[[Architecture, Any], TrialResult]


class TrialFailed(Exception):
    """The metric reported a failed evaluation (the trial is marked FAIL, the study goes on)."""


class Search:
    """Run trials of ``strategy`` on ``study`` until ``budget`` architectures are evaluated.

    Example::

        search = Search(metric, SearchSpace(space), make_strategy("guided"), budget=30, data="search")
        history = search.run(study)

    Args:
        metric: ``metric(architecture, data) -> TrialResult``.
        data: what the metric scores on (a split name such as ``"search"``, or a dataset).
        budget: evaluated (COMPLETE) trials the study should hold; pruned invalid draws do not count.
        tracker: optional MLflow tracker (one nested run per trial).
        on_trial: called with (trial number, architecture, result) after each evaluation (progress bars).
    """

    def __init__(self, metric: Metric, space: "SearchSpace", strategy: "Strategy", *, budget: int,
                 data: Any = "search", tracker: "Tracker | None" = None,
                 on_trial: Callable[[int, Architecture, TrialResult], None] | None = None,
                 max_attempts: int | None = None):
        self.metric = metric
        self.space = space
        self.strategy = strategy
        self.budget = int(budget)
        self.data = data
        self.tracker = tracker
        self.on_trial = on_trial
        self.max_attempts = max_attempts or 20 * self.budget + 100
        self._cache: dict[str, TrialResult] = {}
        self.invalid: list[tuple[int, str, str]] = []  # (trial number, architecture, broken rule)

    # -- the loop ----------------------------------------------------------------------------------
    def run(self, study: optuna.Study) -> History:
        attempts = 0
        while attempts < self.max_attempts:
            fail_stale(study)
            counts = self._counts(study)
            if counts[TrialState.COMPLETE] >= self.budget:
                break
            if counts[TrialState.COMPLETE] + counts[TrialState.RUNNING] >= self.budget:
                time.sleep(0.2)  # other workers are finishing the last trials
                continue
            if counts[TrialState.WAITING] == 0:
                self._enqueue(study)
            attempts += 1
            study.optimize(self._objective, n_trials=1, catch=(TrialFailed,), gc_after_trial=False)
        else:
            logger.warning("stopped after %d attempts with %d evaluated trials (budget %d)",
                           attempts, self._counts(study)[TrialState.COMPLETE], self.budget)
        return History.from_study(study)

    @staticmethod
    def _counts(study: optuna.Study) -> dict[TrialState, int]:
        counts = {s: 0 for s in TrialState}
        for t in study.get_trials(deepcopy=False):
            counts[t.state] += 1
        return counts

    def _enqueue(self, study: optuna.Study) -> None:
        history = History.from_study(study)
        k = getattr(self.strategy, "k", 3)
        for p in self.strategy.propose(history, self.space, k=k):
            v = self.space.violations(p.architecture)
            if v:  # proposers validate already; this is the last line of defence
                logger.warning("proposal %s rejected before enqueue: %s", p.architecture.key(), v[0])
                continue
            study.enqueue_trial(self.space.to_params(p.architecture), skip_if_exists=True,
                                user_attrs={"role": p.role, "edit": p.edit, "parent": p.parent,
                                            "reason": p.reason})
        if self.tracker is not None and self.strategy.artifacts():
            self.tracker.log_round(len(history), self.strategy.artifacts())

    # -- one trial ---------------------------------------------------------------------------------
    def _over_budget(self, trial: optuna.Trial) -> bool:
        """Workers race between counting and asking; the trials with lower numbers win, so two
        workers never both take the last slot (and never both give it up)."""
        ahead = 0
        for t in trial.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.RUNNING)):
            if t.state == TrialState.COMPLETE or t.number < trial.number:
                ahead += 1
        return ahead >= self.budget

    def _objective(self, trial: optuna.Trial) -> float:
        if self._over_budget(trial):
            trial.set_user_attr("over_budget", True)
            raise optuna.TrialPruned("the study's budget is already taken by other workers")
        arch = self.space.suggest(trial)
        if not trial.user_attrs.get("role"):
            trial.set_user_attr("role", self.strategy.name)
        v = self.space.violations(arch)
        if v:
            self.invalid.append((trial.number, arch.key(), v[0].rule))
            logger.info("trial %d: %s is invalid (%s); pruned, not evaluated", trial.number, arch.key(), v[0])
            trial.set_user_attr("invalid", str(v[0]))
            raise optuna.TrialPruned(str(v[0]))
        arch = arch.canonical()
        key = arch.key()
        result = self._cache.get(key)
        if result is None:
            t0 = time.perf_counter()
            result = self.metric(arch, self.data)
            result.cost.setdefault("latency_s", time.perf_counter() - t0)
            if not result.failed:
                self._cache[key] = result
        if result.failed:
            trial.set_user_attr("error", str(result.error)[:500])
            raise TrialFailed(f"{key}: {result.error}")
        trial.set_user_attr(ARCH_ATTR, arch.to_dict())
        trial.set_user_attr(RESULT_ATTR, compact(result))
        if self.tracker is not None:
            self.tracker.log_trial(trial.number, arch, result, dict(trial.user_attrs))
        if self.on_trial is not None:
            self.on_trial(trial.number, arch, result)
        return float(result.objective)

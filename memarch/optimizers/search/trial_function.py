"""The trial function of a memarch study (the callable Optuna's ``study.optimize`` calls), for
memarch's own search and for a user's plain Optuna code: suggest an architecture from the trial,
evaluate it, and store the result on the trial with `record_result` so that `GuidedSampler` can
diagnose it (per-query outcomes, attribution).

Example (a user's own loop)::

    import optuna, memarch
    space = memarch.ParamSpace.for_family("conversation")
    def trial_function(trial):
        arch = space.suggest(trial)
        if not space.is_valid(arch):
            raise optuna.TrialPruned("invalid")
        result = my_evaluate(arch)              # a TrialResult, or use record_outcomes below
        return memarch.record_result(trial, arch, result)
    optuna.create_study(direction="maximize", sampler=memarch.GuidedSampler(space)).optimize(trial_function, n_trials=30)
"""
from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable

import optuna
from optuna.trial import TrialState

from memarch.optimizers.evaluators.base import Evaluator, EvaluatorFunction, as_evaluator
from memarch.optimizers.pruners import InstanceReporter
from memarch.optimizers.search.history import ARCH_ATTR, FIDELITY_ATTR, REPEAT_ATTR, RESULT_ATTR, compact
from memarch.optimizers.search.study import fail_stale
from memarch.optimizers.search.objectives import SINGLE, values_of
from memarch.optimizers.search.settings import SearchSettings
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.trial import QueryOutcome, TrialResult

if TYPE_CHECKING:
    from memarch.optimizers.search.param_space import ParamSpace

logger = logging.getLogger(__name__)

class TrialFailed(Exception):
    """The metric reported a failed evaluation (the trial is marked FAIL, the study goes on)."""


def record_result(trial: optuna.Trial, arch: Architecture, result: TrialResult,
                  objectives: tuple[str, ...] = SINGLE) -> float | tuple[float, ...]:
    """Store ``result`` on ``trial`` (compact per-query outcomes and attribution, the contract the
    guided sampler reads) and return what to hand back to Optuna: the objective value, or with
    several ``objectives`` (e.g. ``("quality", "memory_words")``) a tuple of their values."""
    trial.set_user_attr(ARCH_ATTR, arch.canonical().to_dict())
    # One JSON string, not a nested structure: Optuna deep-copies user attrs on every trial read,
    # and a string (immutable) costs nothing to copy however many outcomes it holds.
    trial.set_user_attr(RESULT_ATTR, json.dumps(compact(result), separators=(",", ":")))
    if len(objectives) > 1:
        return values_of(result, objectives)
    return float(result.score)


def record_outcomes(trial: optuna.Trial, arch: Architecture, outcomes: Iterable[dict | QueryOutcome], *,
                    score: float | None = None) -> float:
    """`record_result` for code without a `TrialResult`: ``outcomes`` are dicts with ``query_id``,
    ``score`` (0..1), and optionally ``success`` (default score >= 0.5), ``category`` and
    ``module`` (which of encode / manage / store / retrieve lost a failed query). The trial's
    ``score`` defaults to the mean of the outcomes'."""
    outs = []
    for o in outcomes:
        if isinstance(o, QueryOutcome):
            outs.append(o)
            continue
        one = float(o["score"])
        outs.append(QueryOutcome(query_id=str(o["query_id"]), score=one,
                                 success=bool(o.get("success", one >= 0.5)), category=str(o.get("category", "")),
                                 attribution=o.get("module") or o.get("attribution")))
    value = score if score is not None else (sum(o.score for o in outs) / len(outs) if outs else 0.0)
    attribution: dict[str, int] = {}
    for o in outs:
        if not o.success and o.attribution:
            attribution[o.attribution] = attribution.get(o.attribution, 0) + 1
    return record_result(trial, arch, TrialResult(arch, "user", "", float(value), outcomes=outs,
                                                  attribution=attribution))


class TrialFunction:
    """The callable a memarch study optimises: one trial = one architecture evaluated by
    ``evaluator`` on ``data``, its values (the study's objectives) handed back to Optuna.

    An invalid draw is pruned (never evaluated, never counted); a draw of an architecture the study
    already evaluated returns that trial's value without evaluating again and is marked
    ``repeat_of`` (it does not count towards the budget of distinct architectures); a failed
    evaluation raises `TrialFailed` (the trial FAILs, the study goes on).

    Example::

        trial_function = TrialFunction(evaluator, space, data="search")   # in a loop of your own
        study.optimize(trial_function, n_trials=10, catch=(TrialFailed,))
        TrialFunction(evaluator, space, SearchSettings(budget=20, pruner="sha"))   # what `Search` runs

    Args:
        evaluator: an `Evaluator` (or a plain ``function(architecture, data) -> TrialResult``).
        space: the `ParamSpace` (distributions and validity).
        settings: the `SearchSettings` it reads (``setting_changes``: changes to it by name):
            ``objectives`` — ``("quality",)`` (one value per trial) or quality and costs (a tuple
            per trial, for a study created with one direction per objective); ``pruner`` —
            ``none``, or a pruner of `pruners.PRUNERS` (the study must have been created with
            `pruners.make_pruner` of the same name): the evaluator scores instance by instance and
            a trial the pruner stops is PRUNED with its partial outcomes and ``fidelity`` (the share
            of instances it saw), ``budget`` then counting full-evaluation equivalents; ``budget`` —
            distinct architectures the study should hold: a trial started when they are all taken
            by other workers is pruned. Without settings or ``budget=`` (a loop of your own) the
            budget is not checked.
        data: what the evaluator scores on (a split name such as ``"search"``).
        on_result: called with (trial number, architecture, result) after each evaluation (a
            pruned one too: its ``result.metadata["instances"]`` says how many dialogues it saw).
    """

    def __init__(self, evaluator: Evaluator | EvaluatorFunction, space: "ParamSpace", settings: SearchSettings | None = None, *,
                 data: Any = "search", on_result: Callable[[int, Architecture, TrialResult], None] | None = None,
                 **setting_changes: Any):
        self.settings = SearchSettings.of(settings, **setting_changes)
        self.evaluator = as_evaluator(evaluator)
        self.pruner = self.settings.pruner
        self.objectives = self.settings.objectives
        if self.pruner != "none" and len(self.objectives) > 1:
            from memarch.errors import MemarchError

            raise MemarchError(f"--pruner {self.pruner} needs one objective (Optuna prunes single-objective "
                               f"studies only), not {', '.join(self.objectives)}")
        self.space = space
        self.data = data
        # The study's budget when a search (or the caller) says it; a plain loop of one's own has none.
        self.budget = self.settings.budget if settings is not None or "budget" in setting_changes else None
        self.on_result = on_result
        self.invalid: list[tuple[int, str, str]] = []  # (trial number, architecture, broken rule)
        self.repeats: list[tuple[int, str, int]] = []  # (trial number, architecture, first trial)
        self.failures: list[tuple[int, str, str]] = []  # (trial number, architecture, error)
        self.evaluated: list[tuple[int, str]] = []  # (trial number, architecture) evaluated here
        self.pruned: list[tuple[int, str, float]] = []  # (trial number, architecture, fidelity) stopped early
        self.unstaged = 0  # trials a pruner could not stop: the evaluator scores only whole splits
        self._seen: dict[str, tuple[int, Any]] = {}  # key -> (first trial, value or values), this process
        self._keys: dict[int, str] = {}  # trial number -> architecture key (trials never change it)

    def __call__(self, trial: optuna.Trial) -> float | tuple[float, ...]:
        if self.budget is not None and distinct_taken(trial.study, before=trial.number, keys=self._keys) >= self.budget:
            trial.set_user_attr("over_budget", True)
            time.sleep(0.2)  # other workers are finishing the last trials
            raise optuna.TrialPruned("the study's budget is already taken by other workers")
        arch = self.space.suggest(trial)
        v = self.space.violations(arch)
        if v:
            self.invalid.append((trial.number, arch.key(), v[0].rule))
            logger.info("trial %d: %s is invalid (%s); pruned, not evaluated", trial.number, arch.key(), v[0])
            trial.set_user_attr("invalid", str(v[0]))
            raise optuna.TrialPruned(str(v[0]))
        arch = arch.canonical()
        key = arch.key()
        first = self._evaluated(trial.study, key, trial.number)
        if first is None and self.pruner != "none":
            stopped = self._pruned_before(trial.study, key)
            if stopped is not None:  # a pruned architecture is not evaluated again: pruned at no cost
                self.repeats.append((trial.number, key, stopped))
                trial.set_user_attr(REPEAT_ATTR, stopped)
                trial.set_user_attr(ARCH_ATTR, arch.to_dict())
                raise optuna.TrialPruned(f"{key} was pruned in trial {stopped}")
        if first is not None:
            number, value = first
            self.repeats.append((trial.number, key, number))
            logger.info("trial %d: %s was evaluated in trial %d; not evaluated again, not counted",
                        trial.number, key, number)
            trial.set_user_attr(REPEAT_ATTR, number)
            trial.set_user_attr(ARCH_ATTR, arch.to_dict())
            return value
        t0 = time.perf_counter()
        reporter = None
        if self.pruner != "none" and self.evaluator.supports_instances():
            reporter = InstanceReporter(trial, self.pruner)
            result = self.evaluator(arch, self.data, on_instance=reporter)
        else:
            self.unstaged += self.pruner != "none"
            result = self.evaluator(arch, self.data)
        result.cost.setdefault("latency_s", time.perf_counter() - t0)
        if result.failed:
            self.failures.append((trial.number, key, str(result.error)[:300]))
            trial.set_user_attr(ARCH_ATTR, arch.to_dict())
            trial.set_user_attr("error", str(result.error)[:500])
            raise TrialFailed(f"{key}: {result.error}")
        if reporter is not None and reporter.stopped:
            record_result(trial, arch, result, self.objectives)
            trial.set_user_attr(FIDELITY_ATTR, round(reporter.fidelity, 6))
            self.pruned.append((trial.number, key, reporter.fidelity))
            if self.on_result is not None:  # result.metadata["instances"] says it is partial
                self.on_result(trial.number, arch, result)
            logger.info("trial %d: %s pruned after %d of %d instances (running mean %.4f)", trial.number, key,
                        reporter.done, reporter.total, result.score)
            raise optuna.TrialPruned(f"pruned after {reporter.done} of {reporter.total} instances")
        value = record_result(trial, arch, result, self.objectives)
        if reporter is not None:
            trial.set_user_attr(FIDELITY_ATTR, 1.0)
        self._seen[key] = (trial.number, value)
        self.evaluated.append((trial.number, key))
        if self.on_result is not None:
            self.on_result(trial.number, arch, result)
        return value

    def _evaluated(self, study: optuna.Study, key: str, number: int | None = None) -> tuple[int, Any] | None:
        """(first trial, its value or values) of ``key`` in the study; when a lower-numbered trial of another
        worker is evaluating it right now, wait for that trial rather than evaluate twice."""
        hit = self._seen.get(key)
        if hit is not None:
            return hit
        if number is not None:
            self._wait_for_running(study, key, number)
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
            if REPEAT_ATTR not in t.user_attrs and RESULT_ATTR in t.user_attrs \
                    and trial_key(t, self._keys) == key:
                values = tuple(float(v) for v in t.values)
                self._seen[key] = (t.number, values if len(self.objectives) > 1 else values[0])
                return self._seen[key]
        return None


    def _pruned_before(self, study: optuna.Study, key: str) -> int | None:
        """The trial that pruned ``key`` earlier, if any."""
        for t in study.get_trials(deepcopy=False, states=(TrialState.PRUNED,)):
            if FIDELITY_ATTR in t.user_attrs and REPEAT_ATTR not in t.user_attrs and ARCH_ATTR in t.user_attrs \
                    and trial_key(t, self._keys) == key:
                return t.number
        return None

    def _wait_for_running(self, study: optuna.Study, key: str, number: int, timeout: float = 3600.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            running = [t for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
                       if t.number < number and (p := self.space.params_of(t)) is not None
                       and self.space.from_params(p).canonical().key() == key]
            if not running:
                return
            time.sleep(0.2)
            fail_stale(study)  # a dead worker's trial is failed (heartbeat), which ends the wait


def trial_key(trial: Any, memo: dict[int, str] | None = None) -> str:
    """The architecture key a finished trial recorded (memoised by trial number)."""
    if memo is not None and trial.number in memo:
        return memo[trial.number]
    key = Architecture.from_dict(trial.user_attrs[ARCH_ATTR]).key()
    if memo is not None:
        memo[trial.number] = key
    return key


def distinct_taken(study: optuna.Study, *, before: int | None = None,
                   keys: dict[int, str] | None = None) -> int | float:
    """Distinct architectures evaluated (COMPLETE, not a repeat) plus trials still RUNNING with a
    lower number than ``before``: workers race between counting and asking, and the lower-numbered
    trials win the last slots. A pruned trial adds its ``fidelity`` (the share of a full
    evaluation it cost): with a pruner the budget is in full-evaluation equivalents.

    A running trial that already knows it takes no slot (pruned as over budget or invalid, or a
    repeat) is not counted: two workers whose over-budget trials each counted the other's would
    prune each other forever once a slot frees up (an invalid or repeated last trial).
    """
    done, running, partial = set(), 0, 0.0
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.RUNNING, TrialState.PRUNED)):
        if t.state == TrialState.PRUNED:
            if FIDELITY_ATTR in t.user_attrs and REPEAT_ATTR not in t.user_attrs:
                partial += float(t.user_attrs[FIDELITY_ATTR])
        elif t.state == TrialState.COMPLETE:
            if REPEAT_ATTR not in t.user_attrs and ARCH_ATTR in t.user_attrs and RESULT_ATTR in t.user_attrs:
                done.add(trial_key(t, keys))
        elif before is not None and t.number < before and not _takes_no_slot(t):
            running += 1
    return len(done) + running + partial if partial else len(done) + running


def _takes_no_slot(trial: Any) -> bool:
    attrs = trial.user_attrs
    return bool(attrs.get("over_budget")) or "invalid" in attrs or REPEAT_ATTR in attrs

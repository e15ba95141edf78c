"""`GuidedSampler`: AutoMem's guided search as an Optuna sampler. ``sample_relative`` proposes a
whole architecture from the study's trials and what their trial function recorded (per-query outcomes,
failure attribution); with nothing to go on it defers to an independent sampler."""
from __future__ import annotations

from memarch.optimizers.search.optuna_internals import whole_study

import logging
from typing import TYPE_CHECKING, Any

from optuna.samplers import BaseSampler, RandomSampler
from optuna.study import StudyDirection
from optuna.trial import TrialState

from memarch.errors import MemarchError
from memarch.optimizers.search import optuna_internals
from memarch.optimizers.samplers.base import MemarchSampler
from memarch.optimizers.search.champion import ALPHA
from memarch.optimizers.samplers.guided.planner import RoundPlanner
from memarch.optimizers.search.history import PROPOSAL_PREFIX, History, HistoryCache
from memarch.optimizers.search.param_space import ParamSpace
from memarch.optimizers.search.study import study_objectives

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution
    from optuna.study import Study
    from optuna.trial import FrozenTrial

    from memarch.optimizers.search.proposal import Proposal
    from memarch.pipeline.space import ArchitectureSpace

logger = logging.getLogger(__name__)


def check_direction(study: "Study", sampler: str = "GuidedSampler") -> None:
    """Refuse a minimising single-objective study: the guided rounds read a higher objective as
    better (champion, leader, diagnosis), so minimising would steer towards the worst architecture."""
    directions = study.directions
    if len(directions) == 1 and directions[0] == StudyDirection.MINIMIZE:
        raise MemarchError(f"{sampler} needs a maximising study (higher objective = better); study "
                           f"{study.study_name} minimises: create it with direction='maximize' (e.g. return "
                           f"1 - loss)")


class GuidedSampler(MemarchSampler):
    """Diagnosis-guided proposals of whole architectures (AutoMem) for any Optuna study.

    Each round reads the study's completed trials — the trial function stores each trial's per-query
    outcomes with `memarch.record_result` — picks the champion (paired sign test), diagnoses which
    module lost its failed queries, turns that into a textual gradient and proposes ``k``
    coordinate edits; the next ``k`` trials take them one by one. It never proposes an architecture
    the study already holds (evaluated, running, queued or failed): such proposals are dropped,
    counted in ``dropped`` and logged. Until the study has ``min_history`` evaluated
    architectures (complete or stopped by a pruner, at least one complete), and whenever a round has nothing left to propose, trials come from
    ``independent_sampler`` (random by default), so the study always makes progress. A higher
    objective is better: a minimising single-objective study is refused (`MemarchError`); completed
    trials whose trial function recorded no outcomes are counted (``unrecorded_trials``) and warned about
    once, rather than the search silently behaving as its independent sampler.

    Example::

        import optuna
        from memarch import GuidedSampler, ParamSpace, record_result

        space = ParamSpace.for_family("conversation")
        def trial_function(trial):
            arch = space.suggest(trial)
            if not space.is_valid(arch):
                raise optuna.TrialPruned()
            return record_result(trial, arch, my_evaluator(arch, "search"))
        study = optuna.create_study(direction="maximize", sampler=GuidedSampler(space, seed=0))
        study.optimize(trial_function, n_trials=20)

    Args:
        space: a `ParamSpace`, an `ArchitectureSpace` or a family name.
        k: proposals per round (3 in AutoMem).
        meta_lm: the LM of the proposer and diagnoser (None: the LM-free attribution rules).
        seed: seed of the default independent sampler.
        alpha: significance of the paired sign test that guards champion changes.
        objectives: the study's objectives (default: those a memarch study stores, else quality);
            with several, each round edits members of their Pareto front (see `RoundPlanner`).
        min_history: evaluated architectures needed before the first guided round (default ``k``;
            pruned ones count, and at least one must be complete).
        independent_sampler: where trials come from before that, and when a round is empty.
    """

    def __init__(self, space: "ParamSpace | ArchitectureSpace | str", *, k: int = 3, meta_lm: Any = None,
                 seed: int | None = None, alpha: float = ALPHA, min_history: int | None = None,
                 independent_sampler: BaseSampler | None = None, objectives: tuple[str, ...] | None = None):
        self.space = ParamSpace.of(space)
        self.objectives = tuple(objectives) if objectives else None
        self.k = int(k)
        self.seed = seed
        self.min_history = self.k if min_history is None else int(min_history)
        self.planner = RoundPlanner(k=self.k, meta_lm=meta_lm, alpha=alpha)
        self._independent = independent_sampler or RandomSampler(seed)
        self._queue: list[Proposal] = []
        self._cache = HistoryCache()
        self.rounds: list[dict[str, Any]] = []  # each round's decision (diagnosis, gradient, proposals)
        self.proposed: dict[int, int] = {}  # trial number -> round index
        self.dropped: list[dict[str, Any]] = []  # proposals not used, with why
        self.fallback_trials = 0  # trials that came from the independent sampler
        self.unrecorded_trials = 0  # completed trials without `record_result` outcomes (warned once)
        self._warned_unrecorded = False

    # -- the sampler contract -----------------------------------------------------------------------
    def infer_relative_search_space(self, study: "Study", trial: "FrozenTrial") -> dict[str, "BaseDistribution"]:
        study = whole_study(study)  # a HyperbandPruner bracket: the whole study
        return self.space.all_distributions()  # full space: a proposal's knob values too

    def sample_relative(self, study: "Study", trial: "FrozenTrial",
                        search_space: dict[str, "BaseDistribution"]) -> dict[str, Any]:
        study = whole_study(study)  # a HyperbandPruner bracket: the whole study
        if not search_space:
            return {}
        check_direction(study, type(self).__name__)
        history = History.from_study(study, self._cache)
        self._check_recorded(study, history)
        # A trial a pruner stopped counts as evaluated (its partial outcomes feed the ledger): with the
        # warm start's presets pruned, waiting for k complete ones drew tens of random trials. A round
        # still needs one complete trial to edit.
        if not history.records or len(history) + len(history.partial) < self.min_history:
            self.fallback_trials += 1
            return {}
        held = self.space.keys_in(study, exclude=trial.number)
        for _ in range(2):  # the queue, then one fresh round
            while self._queue:
                p = self._queue.pop(0)
                key = p.architecture.key()
                if key in held:
                    self._drop(p, "the study already holds it (evaluated, running, queued or failed)")
                    continue
                self._annotate(study, trial, p)
                return self.space.to_params(p.architecture)
            self._plan(history, held, self.objectives or study_objectives(study))
        self.fallback_trials += 1
        logger.info("guided: no untried proposal this round; trial %d comes from %s", trial.number,
                    type(self._independent).__name__)
        return {}

    def sample_independent(self, study: "Study", trial: "FrozenTrial", param_name: str,
                           param_distribution: "BaseDistribution") -> Any:
        study = whole_study(study)  # a HyperbandPruner bracket: the whole study
        return self._independent.sample_independent(study, trial, param_name, param_distribution)

    def before_trial(self, study: "Study", trial: "FrozenTrial") -> None:
        study = whole_study(study)  # a HyperbandPruner bracket: the whole study
        self._independent.before_trial(study, trial)

    def after_trial(self, study: "Study", trial: "FrozenTrial", state: TrialState, values: Any) -> None:
        study = whole_study(study)  # a HyperbandPruner bracket: the whole study
        self._independent.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self._independent.reseed_rng()

    # -- rounds ---------------------------------------------------------------------------------------
    def _plan(self, history: History, held: set[str], objectives: tuple[str, ...]) -> None:
        proposals = self.planner.plan(history, self.space.space, k=self.k, taken=held, objectives=objectives,
                                      search_space=self.space)
        round_ = self.planner.artifacts()
        round_["round"] = len(self.rounds)
        round_["after_trials"] = len(history)
        round_["dropped_lm"] = list(self.planner.proposer.dropped)
        self.dropped.extend(round_["dropped_lm"])
        self.rounds.append(round_)
        self._queue = list(proposals)

    def _check_recorded(self, study: "Study", history: History) -> None:
        """Completed trials the history cannot read (the trial function returned a number without
        `record_result` / `record_outcomes`): counted, and warned about once per sampler — without
        outcomes there is nothing to diagnose and the trials come from the independent sampler."""
        complete = len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
        self.unrecorded_trials = max(0, complete - len(history) - history.repeats)
        if self.unrecorded_trials and not self._warned_unrecorded:
            self._warned_unrecorded = True
            logger.warning("%s: %d completed trial(s) of study %s carry no recorded outcomes (the trial "
                           "function returned a value without memarch.record_result or record_outcomes); without them "
                           "there is nothing to diagnose and those trials are invisible to the guided search, "
                           "which draws from %s meanwhile", type(self).__name__, self.unrecorded_trials,
                           study.study_name, type(self._independent).__name__)

    def _annotate(self, study: "Study", trial: "FrozenTrial", p: "Proposal") -> None:
        self.proposed[trial.number] = len(self.rounds) - 1
        for name, value in p.attrs().items():
            optuna_internals.set_trial_system_attr(study, trial, PROPOSAL_PREFIX + name, value)
        optuna_internals.set_trial_system_attr(study, trial, PROPOSAL_PREFIX + "round", len(self.rounds) - 1)

    def _drop(self, p: "Proposal", why: str) -> None:
        self.dropped.append({"architecture": p.architecture.key(), "role": p.role, "why": why})
        logger.info("guided: proposal %s (%s) dropped: %s", p.architecture.key(), p.role, why)

    def round_of(self, trial_number: int) -> dict[str, Any] | None:
        """The round that proposed a trial (None: not proposed by this sampler in this process)."""
        i = self.proposed.get(trial_number)
        return None if i is None else self.rounds[i]

    def stats(self) -> dict[str, int]:
        proposer = self.planner.proposer
        return {"rounds": len(self.rounds), "dropped_proposals": len(self.dropped),
                "fallback_trials": self.fallback_trials, "unrecorded_trials": self.unrecorded_trials,
                "lm_proposals_repaired": proposer.repaired, "lm_repair_failures": proposer.repair_failures,
                "diagnoser_lm_fallbacks": sum(r.get("lm_fallbacks", {}).get("diagnoser", 0) for r in self.rounds),
                "proposer_lm_fallbacks": sum(r.get("lm_fallbacks", {}).get("proposer", 0) for r in self.rounds)}

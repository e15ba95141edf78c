"""`HybridSampler`: a classical sampler steered by guided's diagnosis (the "Centaur" shape of
Ferreira et al., arXiv 2603.24647). TPE (or any Optuna sampler) proposes every trial; guided
overrides one only where the leader's traces name a module and a move:

- a **trace-backed knob or module move** of the full space (numeric.py: "retrieve.top_k 4 -> 8: 31%
  of the retrieve failures had the gold at rank 5-8", pack, fusion, time, recency, session, stem,
  dense weight), or
- an **edit of the module the failures are attributed to** (the diagnosis names it, with at least
  `MIN_SHARE` of the leader's failures), towards its best-supported untried choice.

Never a coordinate step, an exploration or a joint move: the classical sampler explores. Overrides
are bounded (at most ``max_share`` of the trials after the warm start) and counted: ``overrides``
(``override_moves`` of them trace-backed knob/module moves, ``override_edits`` module edits),
``classical_trials``, and ``overrides_declined`` (a move the bound refused)."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from optuna.samplers import BaseSampler, TPESampler

from memarch.benchmarks.evaluation.diagnosis import diagnose
from memarch.optimizers.samplers.base import MemarchSampler
from memarch.optimizers.samplers.guided.moves import MIN_SHARE
from memarch.optimizers.samplers.guided.numeric import numeric_proposals
from memarch.optimizers.samplers.guided.planner import RoundPlanner
from memarch.optimizers.samplers.guided.proposer_base import ProposalContext
from memarch.optimizers.samplers.guided.sampler import check_direction
from memarch.optimizers.search import optuna_internals
from memarch.optimizers.search.champion import ALPHA
from memarch.optimizers.search.history import PROPOSAL_PREFIX, History, HistoryCache
from memarch.optimizers.search.optuna_internals import whole_study
from memarch.optimizers.search.param_space import ParamSpace
from memarch.optimizers.search.proposal import Proposal

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution
    from optuna.study import Study
    from optuna.trial import FrozenTrial, TrialState

    from memarch.pipeline.space import ArchitectureSpace

logger = logging.getLogger(__name__)

MAX_SHARE = 1 / 3  # at most one trial in three (after the warm start) is guided's


class HybridSampler(MemarchSampler):
    """A classical sampler whose trials guided's diagnosis overrides where the traces name a move.

    Example::

        import optuna
        from memarch import ParamSpace, record_result
        from memarch.optimizers.samplers.guided.hybrid import HybridSampler

        space = ParamSpace.for_family("conversation", mode="full")
        study = optuna.create_study(direction="maximize", sampler=HybridSampler(space, seed=0))
        study.optimize(trial_function, n_trials=40)   # trial_function calls record_result
        study.sampler.stats()   # {"overrides": 6, "override_moves": 4, ..., "classical_trials": 31}

    Args:
        space: a `ParamSpace`, an `ArchitectureSpace` or a family name.
        base: the classical sampler (default TPE with Optuna's defaults and ``constant_liar``).
        seed: the default base sampler's seed.
        max_share: the most trials guided may take, as a share of the trials after the first
            ``min_history`` (a bound, so the classical sampler keeps exploring).
        min_history: evaluated architectures before guided reads any trace (default 3: the warm start).
        alpha: significance of the paired sign test of the ledger (as in `GuidedSampler`).
    """

    def __init__(self, space: "ParamSpace | ArchitectureSpace | str", *, base: BaseSampler | None = None,
                 seed: int | None = None, max_share: float = MAX_SHARE, min_history: int = 3,
                 alpha: float = ALPHA):
        if not 0 <= max_share <= 1:
            raise ValueError(f"max_share must be a share between 0 and 1, got {max_share}")
        self.space = ParamSpace.of(space)
        self.base = base or TPESampler(seed=seed, constant_liar=True)
        self.max_share = float(max_share)
        self.min_history = int(min_history)
        self.planner = RoundPlanner(k=1, alpha=alpha)
        self._cache = HistoryCache()
        self._read: tuple[str, int] | None = None  # (leader, evaluated) the traces were last read at
        self.rounds: list[dict[str, Any]] = []  # each override: trial, architecture, edit, reason, kind
        self.proposed: dict[int, int] = {}  # trial number -> index in rounds
        self.classical_trials = 0
        self.declined = 0

    # -- the sampler contract -----------------------------------------------------------------------
    def infer_relative_search_space(self, study: "Study", trial: "FrozenTrial") -> dict[str, "BaseDistribution"]:
        return self.space.all_distributions()  # an override sets every parameter

    def sample_relative(self, study: "Study", trial: "FrozenTrial",
                        search_space: dict[str, "BaseDistribution"]) -> dict[str, Any]:
        study = whole_study(study)
        if search_space:
            check_direction(study, type(self).__name__)
            override = self._override(study, trial)
            if override is not None:
                return self.space.to_params(override.architecture)
        self.classical_trials += 1
        return self.base.sample_relative(study, trial, self.base.infer_relative_search_space(study, trial))

    def sample_independent(self, study: "Study", trial: "FrozenTrial", param_name: str,
                           param_distribution: "BaseDistribution") -> Any:
        return self.base.sample_independent(whole_study(study), trial, param_name, param_distribution)

    def before_trial(self, study: "Study", trial: "FrozenTrial") -> None:
        self.base.before_trial(whole_study(study), trial)

    def after_trial(self, study: "Study", trial: "FrozenTrial", state: "TrialState", values: Any) -> None:
        self.base.after_trial(whole_study(study), trial, state, values)

    def reseed_rng(self) -> None:
        self.base.reseed_rng()

    # -- overrides ------------------------------------------------------------------------------------
    def _override(self, study: "Study", trial: "FrozenTrial") -> Proposal | None:
        history = History.from_study(study, self._cache)
        if not history.records or len(history) + len(history.partial) < self.min_history:
            return None
        leader = history.best()
        point = (leader.architecture.key(), len(history) + len(history.partial))
        if point == self._read:
            return None  # nothing new since the traces were last read
        self._read = point
        held = self.space.keys_in(study, exclude=trial.number)
        proposal = self.traced_move(history, held)
        if proposal is None:
            return None
        after_warm = len(history) + len(history.partial) - self.min_history + 1
        if len(self.rounds) + 1 > self.max_share * after_warm:
            self.declined += 1
            logger.info("hybrid: %s declined (overrides bounded at %.0f%% of the trials)", proposal.edit,
                        100 * self.max_share)
            return None
        self.proposed[trial.number] = len(self.rounds)
        self.rounds.append({"trial": trial.number, "after_trials": len(history), "leader": leader.architecture.key(),
                            "architecture": proposal.architecture.key(), "edit": proposal.edit,
                            "reason": proposal.reason, "kind": proposal.role})
        for name, value in {**proposal.attrs(), "round": len(self.rounds) - 1}.items():
            optuna_internals.set_trial_system_attr(study, trial, PROPOSAL_PREFIX + name, value)
        return proposal

    def traced_move(self, history: History, held: set[str]) -> Proposal | None:
        """The leader's move its traces name (role ``move``: a trace-backed knob or module move;
        ``edit``: an edit of the module most failures are attributed to), untried and not refuted;
        None when the traces name none."""
        leader = history.best()
        space = self.space.space
        state = self.planner.round_state(history, space)
        tried, inert = history.tried() | held, state.ledger.inert_fields()
        diagnosis, gradient = self.planner.gradient_for(leader, space, state, tried)
        if self.space.mode == "full":
            move, numeric = numeric_proposals(self.space, leader.result, tried, primary=gradient.primary_signal,
                                              inert=inert, inert_knobs=state.ledger.inert_knobs(),
                                              dead_ends=state.ledger.dead_ends())
            if move is not None and numeric and numeric[0].reason == move.text:
                p = numeric[0]
                return Proposal(p.architecture, role="move", edit=p.edit, parent=p.parent, reason=p.reason)
        failures = sum(diagnosis.histogram.values())
        named = [m for m, n in sorted(diagnosis.histogram.items(), key=lambda mn: -mn[1])
                 if n > 0 and m not in inert and failures and n / failures >= MIN_SHARE]
        if not named:
            return None
        ctx = ProposalContext(space, history, state.champion, leader, diagnosis, gradient, state.observations,
                              state.ledger, [], taken=set(held))
        for field in named:
            edits = [e for e in ctx.untried_edits(leader.architecture, field, set(held)) if not e.fields & inert]
            if edits:
                e = edits[0]
                n = diagnosis.histogram[field]
                return Proposal(e.architecture, role="edit", edit=e.text, parent=leader.architecture.key(),
                                reason=f"{n} of {failures} failures ({n / failures:.0%}) attributed to {field}")
        return None

    # -- what it reports ------------------------------------------------------------------------------
    def round_of(self, trial_number: int) -> dict[str, Any] | None:
        i = self.proposed.get(trial_number)
        return None if i is None else self.rounds[i]

    def stats(self) -> dict[str, int]:
        return {"overrides": len(self.rounds),
                "override_moves": sum(r["kind"] == "move" for r in self.rounds),
                "override_edits": sum(r["kind"] == "edit" for r in self.rounds),
                "overrides_declined": self.declined, "classical_trials": self.classical_trials}

"""`RoundPlanner`: one round of the AutoMem search — read the history, pick the champion, diagnose
its failures into a textual gradient, and propose K coordinate edits (LM proposer when a meta LM
is given, the attribution rules otherwise). `GuidedSampler` asks it whenever its queue is empty."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memarch.benchmarks.evaluation.diagnosis import Diagnosis, diagnose
from memarch.optimizers.search.champion import ALPHA, select_champion
from memarch.optimizers.samplers.guided.diagnoser import Diagnoser
from memarch.optimizers.samplers.guided.edits import candidate_edits
from memarch.optimizers.samplers.guided.ledger import Ledger
from memarch.optimizers.samplers.guided.observations import Observations
from memarch.optimizers.search.pareto import objective_front, pareto_front
from memarch.optimizers.samplers.guided.lm_proposer import LMProposer
from memarch.optimizers.samplers.guided.numeric import numeric_proposals
from memarch.optimizers.samplers.guided.proposer import AttributionProposer
from memarch.optimizers.samplers.guided.proposer_base import ProposalContext, Proposer
from memarch.optimizers.search.objectives import SINGLE, values_of

if TYPE_CHECKING:
    from memarch.optimizers.search.history import History, TrialRecord
    from memarch.optimizers.search.proposal import Proposal
    from memarch.optimizers.search.param_space import ParamSpace
    from memarch.pipeline.architecture import Architecture
    from memarch.pipeline.space import ArchitectureSpace

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RoundState:
    """What one round's edits read: the noise-guarded champion, per-choice observations, the ledger."""

    champion: Any
    observations: Observations
    ledger: Ledger


class RoundPlanner:
    """Diagnosis-guided proposals (AutoMem); LM proposer and diagnoser when ``meta_lm`` is given.

    Example::

        planner = RoundPlanner(k=3)                       # LM-free, deterministic
        proposals = planner.plan(history, space)          # up to k untried, valid architectures
        planner.artifacts()["gradient"]                   # the round's textual gradient

    Args:
        k: proposals per round (3 in AutoMem).
        meta_lm: the LM for the proposer and diagnoser (None: the LM-free rules).
        alpha: significance of the paired sign test guarding champion changes.

    In a multi-objective study (``plan(..., objectives=("quality", "memory_words"))``) the front
    is the non-dominated set over the study's objectives and the round edits its members in turn,
    best quality first: the cheaper members are improved too, not only the best-quality one.
    """

    def __init__(self, *, k: int = 3, meta_lm: Any = None, alpha: float = ALPHA):
        self.k = k
        self.alpha = alpha
        self.diagnoser = Diagnoser(meta_lm)
        self.proposer: Proposer = LMProposer(meta_lm) if meta_lm is not None else AttributionProposer()
        self._last: dict[str, Any] = {}
        self.rounds = 0

    def plan(self, history: "History", space: "ArchitectureSpace", *, k: int | None = None,
             taken: set[str] | None = None, objectives: tuple[str, ...] = SINGLE,
             search_space: "ParamSpace | None" = None) -> list["Proposal"]:
        """Up to ``k`` proposals for the next round; ``taken``: keys running or queued elsewhere;
        ``objectives``: the study's (several: the leader is a member of their Pareto front). With a
        full ``search_space`` one of them is a numeric move of a knob (see numeric.py)."""
        k = k or self.k
        if not history.records:
            return []
        state = self.round_state(history, space)
        champion, obs, ledger = state.champion, state.observations, state.ledger
        if len(objectives) > 1:
            front = objective_front(history.records, objectives)
            leader = front[self.rounds % len(front)]
        else:
            front = pareto_front(history.records)
            leader = history.best()  # the round edits the leader; the champion guards what is kept
        self.rounds += 1
        tried, inert = history.tried() | set(taken or ()), ledger.inert_fields()
        fell_back = self.fallback_counts()
        diagnosis, gradient = self.gradient_for(leader, space, state, tried)
        move, numeric = None, []
        if search_space is not None and search_space.mode == "full":
            move, numeric = numeric_proposals(search_space, leader.result, tried, primary=gradient.primary_signal,
                                              inert=inert, inert_knobs=ledger.inert_knobs(),
                                              dead_ends=ledger.dead_ends())
        more = k - len(numeric)
        proposals = numeric + (self.proposals_for(leader, history, space, state, front, diagnosis, gradient, k=more,
                                                  taken=set(taken or ()) | {p.architecture.key() for p in numeric})
                               if more > 0 else [])
        if not proposals:
            logger.info("guided: every neighbour of the front is tried; the next trials come from the fallback sampler")
        self._last = {"diagnosis": diagnosis.to_dict(), "gradient": gradient.model_dump(),
                      "numeric_move": move.to_dict() if move is not None else None,
                      "ledger": ledger.to_dict(), "champion": champion.architecture.key(),
                      "leader": leader.architecture.key(), "inert_modules": sorted(inert),
                      "observations": obs.to_dict(),
                      "objectives": list(objectives),
                      "pareto_front": [{"architecture": r.architecture.key(), "score": r.score,
                                        "cost": r.cost, "values": list(values_of(r.result, objectives))}
                                       for r in front],
                      "proposals": [{"architecture": p.architecture.key(), "role": p.role, "edit": p.edit}
                                    for p in proposals],
                      "lm_fallbacks": self.fallbacks_since(fell_back)}
        return proposals

    # The steps of a round, shared with the archive strategy (archive_sampler.py), which edits
    # parents drawn from its archive instead of the leader.
    def round_state(self, history: "History", space: "ArchitectureSpace") -> RoundState:
        """What every edit of one round reads: the champion, the observations and the ledger."""
        return RoundState(champion=select_champion(history, self.alpha),
                          observations=Observations.from_history(history, space.encoders),
                          ledger=Ledger.from_history(history, self.alpha))

    def gradient_for(self, parent: "TrialRecord", space: "ArchitectureSpace", state: RoundState,
                     tried: set[str]) -> tuple[Diagnosis, Any]:
        """The parent's diagnosis and the textual gradient over its untried, non-dead-end edits."""
        diagnosis = diagnose(parent.result)
        actions = edit_menu(space, parent.architecture, state.observations, state.ledger, tried)
        return diagnosis, self.diagnoser(diagnosis, actions)

    def proposals_for(self, parent: "TrialRecord", history: "History", space: "ArchitectureSpace",
                      state: RoundState, front: list["TrialRecord"], diagnosis: Diagnosis, gradient: Any, *,
                      k: int, taken: set[str]) -> list["Proposal"]:
        """Up to ``k`` untried, valid edits of ``parent`` that follow ``gradient``."""
        ctx = ProposalContext(space, history, state.champion, parent, diagnosis, gradient, state.observations,
                              state.ledger, front, taken=set(taken))
        return self.proposer.propose(ctx, k)

    def fallback_counts(self) -> tuple[int, int]:
        """The diagnoser's and the proposer's used-fallback counters now (a retry that succeeded
        is not a fallback)."""
        return self.diagnoser.fallbacks, self.proposer.fallbacks

    def fallbacks_since(self, before: tuple[int, int]) -> dict[str, int]:
        now = self.fallback_counts()
        return {"diagnoser": now[0] - before[0], "proposer": now[1] - before[1]}

    def artifacts(self) -> dict[str, Any]:
        return dict(self._last)


def edit_menu(space: "ArchitectureSpace", arch: "Architecture", obs: Observations, ledger: Ledger,
              tried: set[str]) -> dict[str, str]:
    """What the diagnoser may recommend for ``arch``: per module, the best-supported edit that is
    untried, not a dead end and touches no inert module."""
    dead, inert = ledger.dead_ends(), ledger.inert_fields()
    actions: dict[str, str] = {}
    for field in ("encode", "store", "retrieve", "manage"):
        for e in candidate_edits(space, arch, field, obs):
            if e.architecture.key() not in tried and e.text not in dead and not e.fields & inert:
                actions[field] = e.text
                break
    return actions

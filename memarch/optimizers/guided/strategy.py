"""`GuidedStrategy`: the AutoMem search loop as an Optuna strategy — each round reads the history,
diagnoses the champion's failures into a textual gradient, and proposes K coordinate edits that
are enqueued as trials."""
from __future__ import annotations

import logging
import random
from typing import TYPE_CHECKING, Any

from memarch.optimizers.guided.champion import ALPHA, select_champion
from memarch.optimizers.guided.diagnoser import Diagnoser
from memarch.optimizers.guided.diagnosis import diagnose
from memarch.optimizers.guided.ledger import Ledger
from memarch.optimizers.guided.observations import Observations
from memarch.optimizers.guided.pareto import pareto_front
from memarch.optimizers.guided.proposer import AttributionProposer, LMProposer, ProposalContext
from memarch.optimizers.guided.edits import candidate_edits
from memarch.optimizers.strategies import Proposal, Strategy

if TYPE_CHECKING:
    from memarch.optimizers.history import History
    from memarch.optimizers.space import SearchSpace

logger = logging.getLogger(__name__)


class GuidedStrategy(Strategy):
    """Diagnosis-guided proposals (AutoMem); LM proposer and diagnoser when ``meta_lm`` is given.

    Example::

        strategy = GuidedStrategy(seed=0, k=3)            # LM-free, deterministic
        strategy = GuidedStrategy(seed=0, meta_lm=dspy.LM("openai/gpt-4o-mini"))

    Args:
        seed: picks the round-0 seeds (human-designed presets valid in the space, then random).
        k: proposals per round (3 in AutoMem).
        meta_lm: the LM for the proposer and diagnoser (None: the LM-free rules).
        lm: accepted for symmetry with `MemarchOptimizer`; used when ``meta_lm`` is None.
        alpha: significance of the paired sign test guarding champion changes.
    """

    name = "guided"

    def __init__(self, seed: int | None = 0, *, k: int = 3, meta_lm: Any = None, lm: Any = None,
                 alpha: float = ALPHA):
        super().__init__(seed)
        self.k = k
        self.alpha = alpha
        lm_for_search = meta_lm if meta_lm is not None else lm
        self.diagnoser = Diagnoser(lm_for_search)
        self.proposer = LMProposer(lm_for_search) if lm_for_search is not None else AttributionProposer()
        self._last: dict[str, Any] = {}

    def propose(self, history: "History", space: "SearchSpace", *, k: int | None = None) -> list[Proposal]:
        k = k or self.k
        arch_space = space.space
        if not history.records:
            return self._seeds(space, k)
        champion = select_champion(history, self.alpha)
        leader = history.best()
        obs = Observations.from_history(history, arch_space.encoders)
        ledger = Ledger.from_history(history, self.alpha)
        front = pareto_front(history.records)
        diagnosis = diagnose(champion.result)
        tried, dead = history.tried(), ledger.dead_ends()
        actions = {}
        for field in ("encode", "store", "retrieve", "manage"):
            for e in candidate_edits(arch_space, champion.architecture, field, obs):
                if e.architecture.key() not in tried and e.text not in dead:
                    actions[field] = e.text
                    break
        gradient = self.diagnoser(diagnosis, actions)
        ctx = ProposalContext(arch_space, history, champion, leader, diagnosis, gradient, obs, ledger, front)
        proposals = self.proposer.propose(ctx, k)
        if not proposals:
            logger.info("guided: every neighbour of the front is tried; falling back to the sampler")
        self._last = {"diagnosis": diagnosis.to_dict(), "gradient": gradient.model_dump(),
                      "ledger": ledger.to_dict(), "champion": champion.architecture.key(),
                      "observations": obs.to_dict(),
                      "pareto_front": [{"architecture": r.architecture.key(), "objective": r.objective,
                                        "cost": r.cost} for r in front],
                      "proposals": [{"architecture": p.architecture.key(), "role": p.role, "edit": p.edit}
                                    for p in proposals]}
        return proposals

    def _seeds(self, space: "SearchSpace", k: int) -> list[Proposal]:
        from memarch.optimizers.presets import presets_for

        valid = [a for a in presets_for(space.space).values()]
        uniq = list({a.key(): a for a in valid}.values())
        rng = random.Random(self.seed)
        rng.shuffle(uniq)
        seeds = uniq[:k]
        if len(seeds) < k:
            pool = [a for a in space.space.enumerate() if a.key() not in {s.key() for s in seeds}]
            seeds += rng.sample(pool, min(k - len(seeds), len(pool)))
        return [Proposal(a, role="seed", reason="round-0 seed") for a in seeds]

    def artifacts(self) -> dict[str, Any]:
        return dict(self._last)

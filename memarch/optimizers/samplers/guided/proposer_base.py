"""`Proposer`: what proposes a round's architectures in the guided search — ``propose(ctx, k)``
over a `ProposalContext` (everything it reads in one round) — and the counts the sampler reads
from it (dropped proposals, fallbacks, repairs), declared here with their defaults: a proposer that
never drops, falls back or repairs keeps them."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field

from memarch.benchmarks.evaluation.diagnosis import Diagnosis
from memarch.optimizers.samplers.guided.edits import Edit, candidate_edits
from memarch.optimizers.samplers.guided.gradient import TextualGradient
from memarch.optimizers.samplers.guided.ledger import Ledger
from memarch.optimizers.samplers.guided.observations import Observations
from memarch.optimizers.search.history import History, TrialRecord
from memarch.optimizers.search.proposal import Proposal
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.space import ArchitectureSpace


@dataclass
class ProposalContext:
    """Everything a proposer reads in one round."""

    space: ArchitectureSpace
    history: History
    champion: TrialRecord
    leader: TrialRecord  # best raw score (may not have beaten the champion significantly)
    diagnosis: Diagnosis
    gradient: TextualGradient
    observations: Observations
    ledger: Ledger
    front: list[TrialRecord]
    taken: set[str] = dataclass_field(default_factory=set)  # running or queued in the study (other workers)

    def tried(self) -> set[str]:
        if "_tried" not in self.__dict__:
            self.__dict__["_tried"] = self.history.tried() | self.taken
        return self.__dict__["_tried"]

    def encoder_set_count(self, encoders: set[str]) -> int:
        """How many evaluated architectures have exactly this set of encoders (memoised)."""
        if "_encoder_sets" not in self.__dict__:
            counts: dict[frozenset[str], int] = {}
            for r in self.history.records:
                key = frozenset(r.architecture.encode)
                counts[key] = counts.get(key, 0) + 1
            self.__dict__["_encoder_sets"] = counts
        return self.__dict__["_encoder_sets"].get(frozenset(encoders), 0)

    def matters(self, field: str) -> bool:
        """Evidence that a module changes outcomes: failures the diagnosis attributes to it, an edit of
        it that moved an outcome, or (encoders) a presence that moves the mean score."""
        if self.diagnosis.histogram.get(field, 0) > 0 or field in self.ledger.moved_fields():
            return True
        if field == "encode":
            return any(abs(self.observations.encoder_effect(e)) > 1e-9 for e in self.space.encoders)
        return False

    def edits(self, base: Architecture, field: str) -> list[Edit]:
        """Every valid one-step edit of ``field`` from ``base``, best supported first (memoised for
        the round: the observations do not change within it)."""
        memo = self.__dict__.setdefault("_edits", {})
        key = (base.key(), field)
        if key not in memo:
            memo[key] = candidate_edits(self.space, base, field, self.observations)
        return memo[key]

    def untried_edits(self, base: Architecture, field: str, taken: set[str]) -> list[Edit]:
        tried, dead = self.tried(), self.ledger.dead_ends()
        return [e for e in self.edits(base, field)
                if e.architecture.key() not in tried and e.architecture.key() not in taken
                and e.text not in dead]



class Proposer:
    """Up to ``k`` untried, valid architectures for one round. Subclasses implement `propose` and
    set the counts they keep.

    Not an `abc.ABC`: the LM proposer is a `dspy.Module`, whose metaclass is not ``ABCMeta`` (the
    house's module bases, `Retriever` or `Store`, are plain classes for the same reason).

    Example::

        class Leader(Proposer):
            def propose(self, ctx, k):
                return []   # nothing to propose: the round's trials come from the fallback sampler

        RoundPlanner(k=3).proposer = Leader()
    """

    # The last round's proposals that were not used, each {"architecture", "why"} (GuidedSampler
    # adds them to its ``dropped``).
    dropped: Sequence[dict[str, str]] = ()
    fallbacks: int = 0  # rounds whose proposals came from a fallback proposer instead
    repaired: int = 0  # invalid proposals repaired into valid ones
    repair_failures: int = 0  # invalid proposals that could not be repaired (dropped)

    def propose(self, ctx: ProposalContext, k: int) -> list[Proposal]:
        """Up to ``k`` proposals for the round described by ``ctx``."""
        raise NotImplementedError

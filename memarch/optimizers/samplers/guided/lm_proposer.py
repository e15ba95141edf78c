"""The guided search's proposer with a meta LM. `LMProposer`: a DSPy module over the
`ProposeArchitectures` Signature whose answers are validated and repaired, and completed by the
attribution proposer when they do not parse or do not fit (every dropped proposal is counted)."""
from __future__ import annotations

import logging
from typing import Any

import dspy

from memarch.optimizers.samplers.guided.edits import describe
from memarch.optimizers.samplers.guided.proposer import AttributionProposer
from memarch.optimizers.samplers.guided.proposer_base import ProposalContext, Proposer
from memarch.optimizers.search.proposal import Proposal
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.space import RULES

logger = logging.getLogger(__name__)


class LMProposer(dspy.Module, Proposer):
    """The proposer LM: typed Signature, one corrective retry, validation and repair, then the
    attribution proposer for whatever is still missing (logged)."""

    def __init__(self, lm: Any):
        super().__init__()
        from memarch.optimizers.samplers.guided.signatures import ProposeArchitectures

        self.lm = lm
        self.predict = dspy.Predict(ProposeArchitectures)
        self.fallback = AttributionProposer()
        self.last_error: str | None = None  # the last unusable answer (also when a retry then succeeded)
        self.dropped: list[dict[str, str]] = []  # the last round's LM proposals that were not used
        self.fallbacks = 0  # rounds whose LM answer was unusable twice: the attribution proposer's were used
        self.lm_requests = 0
        self.repaired = 0  # invalid LM proposals repaired into valid ones
        self.repair_failures = 0  # invalid LM proposals that could not be repaired (dropped)

    def _ask(self, ctx: ProposalContext, k: int, note: str = "") -> list[Any]:
        menus = {"encode": ctx.space.encoders, "store": ctx.space.stores,
                 "retrieve": ctx.space.retrievers, "manage": ctx.space.managers}
        rows = sorted(ctx.history.records, key=lambda r: -r.score)[:20]
        history = "\n".join(f"{r.architecture.key()}  score={r.score:.4f} cost={r.cost:.0f}" for r in rows)
        with dspy.context(lm=self.lm, adapter=dspy.JSONAdapter()):
            pred = self.predict(menus=menus, rules=list(RULES.values()) + ([note] if note else []),
                                champion=ctx.leader.architecture.key(), gradient=ctx.gradient,
                                history=history, ledger=ctx.ledger.summary(),
                                pareto_front=[f"{r.architecture.key()} ({r.score:.4f}, {r.cost:.0f})"
                                              for r in ctx.front[:8]], k=k)
        return list(pred.proposals)

    def propose(self, ctx: ProposalContext, k: int) -> list[Proposal]:
        raw: list[Any] | None = None
        self.last_error = None
        self.lm_requests += 1
        for attempt, note in enumerate(("", "Your previous answer did not parse: answer with valid JSON "
                                            "for the 'proposals' field only.")):
            try:
                raw = self._ask(ctx, k, note)
                break
            except Exception as exc:  # noqa: BLE001 — any LM/adapter failure ends in the fallback
                self.last_error = f"{type(exc).__name__}: {exc}"[:300]
                logger.warning("proposer LM answer unusable (attempt %d): %s", attempt + 1, self.last_error)
        out: list[Proposal] = []
        taken: set[str] = set()
        tried, dead = ctx.tried(), ctx.ledger.dead_ends()
        self.dropped = []
        for p in raw or []:
            arch = Architecture(tuple(p.encode), p.store, p.retrieve, p.manage)
            v = ctx.space.violations(arch)
            if v:
                try:
                    fixed = ctx.space.repair(arch)
                except Exception:  # noqa: BLE001
                    fixed = None
                logger.info("LM proposal %s invalid (%s); repaired to %s", arch.key(), v[0], fixed and fixed.key())
                if fixed is None:  # counted with the dropped proposals, not lost
                    self.repair_failures += 1
                    self.dropped.append({"architecture": arch.key(), "why": f"invalid ({v[0]}); repair failed"})
                    continue
                self.repaired += 1
                arch = fixed
            arch = arch.canonical()
            if arch.key() in tried or arch.key() in taken:
                logger.info("LM proposal %s already evaluated or queued; dropped", arch.key())
                self.dropped.append({"architecture": arch.key(), "why": "already evaluated or queued"})
                continue
            taken.add(arch.key())
            edit = describe(ctx.leader.architecture, arch)
            if edit in dead:
                logger.info("LM proposal %s repeats the refuted edit %r; dropped", arch.key(), edit)
                self.dropped.append({"architecture": arch.key(), "why": f"refuted edit {edit!r}"})
                continue
            out.append(Proposal(arch, role="lm", edit=edit, parent=ctx.leader.architecture.key(),
                                reason=p.rationale[:200]))
            if len(out) >= k:
                break
        if len(out) < k:
            if raw is None:  # the fallback answer is used: counted (a retry that succeeded is not)
                self.fallbacks += 1
                logger.warning("proposer LM failed twice; using the attribution proposer")
            out.extend(self.fallback.propose(ctx, k - len(out), taken))
        return out

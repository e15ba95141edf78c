"""The guided search's proposer without an LM. `AttributionProposer`: edit the module with the most
attributed failures towards its best-supported untried alternative, with explore/exploit roles.
(`Proposer` and `ProposalContext`, what every proposer reads in a round, are in proposer_base.py;
the LM proposer is in lm_proposer.py.)"""
from __future__ import annotations

import logging

from memarch.optimizers.samplers.guided.edits import Edit, describe, with_choice
from memarch.optimizers.samplers.guided.proposer_base import ProposalContext, Proposer
from memarch.optimizers.search.proposal import Proposal
from memarch.pipeline.architecture import Architecture

logger = logging.getLogger(__name__)


class AttributionProposer(Proposer):
    """Deterministic, LM-free proposals.

    Roles: ``exploit`` edits the leader towards the best-supported untried choice of the modules
    the failures point at (slots shared in proportion to attributed failures, the gradient's module
    first), plus a joint move setting every module to its best-supported observed choice when that
    combination is untried (it takes the explore slot of that round); ``explore`` takes the
    least-observed choice around the leader (for encoders also leave-one-out ablations), modules
    with evidence that they matter first, and restarts from the Pareto front when every neighbour
    is tried. Modules shown inert are never edited. It never drops, falls back or repairs: its
    counts are the `Proposer` defaults.

    Example::

        proposals = AttributionProposer().propose(ctx, k=3)
    """

    def propose(self, ctx: ProposalContext, k: int, taken: set[str] | None = None) -> list[Proposal]:
        taken = set(taken or ())
        out: list[Proposal] = []
        # Edits start from the leader (best search score): the search score is measured, not
        # sampled, and the champion's sign-test guard only decides what is kept (the finalists).
        leader = ctx.leader.architecture
        inert = ctx.ledger.inert_fields()
        n_exploit = max(1, k - 1) if k > 1 else 1
        for field in self._exploit_fields(ctx, n_exploit, inert):
            edits = [e for e in ctx.untried_edits(leader, field, taken) if not e.fields & inert]
            if edits:
                e = edits[0]
                out.append(self._proposal(e, "exploit", leader, f"{ctx.diagnosis.histogram.get(field, 0)} failures"))
                taken.add(e.architecture.key())
        if len(out) < k:
            joint = self._joint_best(ctx, taken, inert)
            if joint is not None:
                out.append(Proposal(joint, role="exploit", edit=describe(leader, joint), parent=leader.key(),
                                    reason="best-supported choice of every module, jointly"))
                taken.add(joint.key())
        # Explore first where there is evidence a module matters (failures attributed to it, an edit of
        # it that moved an outcome, encoders whose presence moves the mean); modules with none — often
        # store and manager LM-free — come after, and modules shown inert last.
        silent = inert | {f for f in ("encode", "store", "retrieve", "manage") if not ctx.matters(f)}
        while len(out) < k:
            e = (self._explore(ctx, leader, taken, silent) or self._explore(ctx, leader, taken, inert)
                 or self._any_untried(ctx, taken, silent) or self._any_untried(ctx, taken, inert)
                 or self._any_untried(ctx, taken))
            if e is None:
                break
            out.append(self._proposal(e, "explore", leader, "least observed choice"))
            taken.add(e.architecture.key())
        return out

    @staticmethod
    def _exploit_fields(ctx: ProposalContext, slots: int, inert: set[str] = frozenset()) -> list[str]:
        """Exploit slots shared among the modules failures point at, in proportion to their
        attributed failures (D'Hondt): 12 retrieval failures and none elsewhere give every slot to
        retrieve. Without attributed failures, the gradient's module, then the rest. Modules shown
        inert (their edits changed no outcome) get no slot while another module has failures."""
        hist = {m: n for m, n in ctx.diagnosis.histogram.items() if n > 0}
        if any(m not in inert for m in hist):
            hist = {m: n for m, n in hist.items() if m not in inert}
        primary = ctx.gradient.primary_signal
        if not hist:
            return ([primary] + [m for m in ctx.diagnosis.ranked() if m != primary])[:slots]
        given: dict[str, int] = {m: 0 for m in hist}
        out = []
        for _ in range(slots):
            m = max(hist, key=lambda m: (hist[m] / (1 + given[m]), m == primary))
            given[m] += 1
            out.append(m)
        # The gradient's recommendation (LM or rules) goes first.
        return sorted(out, key=lambda m: m != primary)

    @staticmethod
    def _proposal(e: Edit, role: str, parent: Architecture, why: str) -> Proposal:
        return Proposal(e.architecture, role=role, edit=e.text, parent=parent.key(), reason=why)

    def _explore(self, ctx: ProposalContext, base: Architecture, taken: set[str],
                 inert: set[str] = frozenset()) -> Edit | None:
        best, best_key = None, None
        for field in ("encode", "store", "retrieve", "manage"):
            if field in inert:
                continue
            for e in ctx.untried_edits(base, field, taken):
                if e.fields & inert:
                    continue  # a rule would drag an inert module along: nothing to learn there
                if field == "encode":
                    added = set(e.architecture.encode) - set(base.encode)
                    if added:
                        n = min(ctx.observations.count("encode", a) for a in added)
                    else:  # a leave-one-out ablation: under a context budget one encoder's items
                        # can crowd out another's answers; new while that encoder set is unseen
                        n = ctx.encoder_set_count(set(e.architecture.encode))
                else:
                    n = ctx.observations.count(field, e.after)
                key = (n, -e.support, e.text)
                if best_key is None or key < best_key:
                    best, best_key = e, key
        return best


    @staticmethod
    def _joint_best(ctx: ProposalContext, taken: set[str], inert: set[str] = frozenset()) -> Architecture | None:
        """The combination of the individually best-supported observed choices: the leader with
        every module but the inert ones set to its best-supported value (encoders: the leader's set
        plus encoders whose with/without effect is positive, minus those whose effect is negative),
        kept valid. None when it is already tried, taken, or a refuted edit."""
        obs, leader = ctx.observations, ctx.leader.architecture
        arch = leader
        for field, menu in (("store", ctx.space.stores), ("retrieve", ctx.space.retrievers),
                            ("manage", ctx.space.managers)):
            if field in inert:
                continue  # keep the leader's value: the module changes nothing measured
            seen = [v for v in menu if obs.count(field, v) > 0]
            if not seen:
                continue
            best = max(seen, key=lambda v: (obs.support(field, v), v == getattr(leader, field)))
            if best != getattr(arch, field):
                arch = with_choice(ctx.space, arch, field, best) or arch
        enc = set(arch.encode)
        for e in ctx.space.encoders:
            eff = obs.encoder_effect(e)
            if eff > 0:
                enc.add(e)
            elif eff < 0 and e in enc and len(enc) > 1:
                enc.discard(e)
        cand = ctx.space.fit_params(Architecture(tuple(enc), arch.store, arch.retrieve, arch.manage,
                                                 params=arch.params)).canonical()
        if ctx.space.is_valid(cand):
            arch = cand
        arch = arch.canonical()
        if not ctx.space.is_valid(arch) or any(getattr(arch, f) != getattr(leader, f) for f in inert if f != "encode"):
            return None
        key = arch.key()
        if key in ctx.tried() or key in taken or describe(leader, arch) in ctx.ledger.dead_ends():
            return None
        return arch

    def _any_untried(self, ctx: ProposalContext, taken: set[str], inert: set[str] = frozenset()) -> Edit | None:
        """When every neighbour of the leader is tried: restart from the Pareto
        front, then from every evaluated architecture, best first (a best-first local search)."""
        seen: set[str] = set()
        ranked = sorted(ctx.history.records, key=lambda r: (-r.score, r.cost, r.number))
        for r in [*ctx.front, *ranked]:
            key = r.architecture.key()
            if key in seen:
                continue
            seen.add(key)
            e = self._explore(ctx, r.architecture, taken, inert)
            if e is not None:
                return e
        return None

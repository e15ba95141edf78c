"""The guided search's trace-backed move to session-first reading: ``retrieve: X -> session`` when
the failures' traces show the gold's session was found but its turn was pushed out of the context
by other sessions' items ("retrieve: hybrid -> session: 34% of the retrieve failures had the gold's
session among the first 3 and the gold within the context once the other sessions' items are
dropped")."""
from __future__ import annotations

from typing import TYPE_CHECKING

from memarch.benchmarks.evaluation.attribution import TOP_SESSIONS
from memarch.optimizers.samplers.guided.edits import with_choice
from memarch.optimizers.samplers.guided.moves import NumericMove, backed
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.trial import TrialResult

if TYPE_CHECKING:
    from memarch.optimizers.search.param_space import ParamSpace

SESSION = "session"


def session_move(result: TrialResult, space: "ParamSpace") -> NumericMove | None:
    """``retrieve: X -> session`` when at least `moves.MIN_SHARE` of the retrieve failures had the
    gold item's session among the first `TOP_SESSIONS` sessions of a deeper read (sessions ordered
    by their best item) and the gold within the failed read's ``read_items`` once the items of the
    other sessions are dropped: what a read of the top sessions' items keeps.

    Reads ``gold_session_rank`` / ``gold_rank_in_sessions`` (recorded by
    `memarch.benchmarks.evaluation.attribution.gold_rank` for items written by sessions); None when
    the space has no session retriever, the leader reads sessions first already, or the evidence is
    missing (agent tasks: their items have no sessions to rank).
    """
    arch = result.architecture
    if arch is None or arch.retrieve == SESSION or SESSION not in space.space.retrievers:
        return None
    failures = [o for o in result.outcomes if not o.success and o.attribution == "retrieve"
                and "gold_session_rank" in o.evidence]
    if not failures:
        return None
    hits = [o for o in failures if o.evidence["gold_session_rank"] <= TOP_SESSIONS
            and o.evidence["gold_rank_in_sessions"] <= o.evidence["read_items"]]
    return backed("retrieve", arch.retrieve, SESSION, hits, failures, f"retrieve: {arch.retrieve} -> {SESSION}",
                  f"had the gold's session among the first {TOP_SESSIONS} and the gold within the context once "
                  "the other sessions' items are dropped")


def with_session_reading(space: "ParamSpace", arch: Architecture) -> Architecture | None:
    """``arch`` reading sessions first, or None if no valid architecture of the space does. The
    retriever's shared knobs (packing, time, recency, entity: a knob ``group``) and ``top_k`` are
    kept; the old retriever's own knobs are not carried over, even where the session retriever has
    a knob of the same name (``dense_weight``, ``fusion``): its defaults are the published ones."""
    knobs = space.space.knobs_of(arch)
    own = {key for key, (role, _, knob) in knobs.items()
           if role == "retriever" and not knob.group and knob.name != "top_k"}
    cand = with_choice(space.space, arch.replace(params={k: v for k, v in arch.params if k not in own}),
                       "retrieve", SESSION)
    return cand if cand is not None and cand.retrieve == SESSION else None

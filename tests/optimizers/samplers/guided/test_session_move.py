"""The guided search reaches session-first reading from traces, and its numeric moves roll back a
change that hurt: the diagnosis read records where the gold's session ranked (hand-checked on a
crafted read); ``retrieve: X -> session`` is proposed when the gold's session was found but other
sessions' items pushed its turn out, with the shared knobs kept and the old retriever's own dropped;
a refuted knob step is never repeated from another parent and the knob steps the other way first."""
from __future__ import annotations

import pytest

from memarch.benchmarks.evaluation.attribution import TOP_SESSIONS, gold_rank
from memarch.optimizers.samplers.guided.ledger import REFUTED, Ledger, LedgerEntry
from memarch.optimizers.samplers.guided.numeric import numeric_proposals
from memarch.optimizers.samplers.guided.session_move import session_move
from memarch.optimizers.search.history import compact, expand
from memarch.optimizers.search.param_space import ParamSpace
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.episodes import Query
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.retrieval import Retrieval, ScoredItem
from memarch.pipeline.space import ArchitectureSpace
from memarch.pipeline.trial import QueryOutcome, TrialResult

BASE = Architecture(("turn",), "vector", "hybrid", "lightweight",
                    params={"retrieve.top_k": 4, "retrieve.pack": 1, "retrieve.time_weight": 1.0,
                            "retrieve.dense_weight": 3.0})


@pytest.fixture(scope="module")
def full() -> ParamSpace:
    return ParamSpace(ArchitectureSpace("conversation", lm_available=False), "full")


def _read(sessions: list[str]):
    """A read whose i-th item comes from session ``sessions[i]`` and cites turn t{i}."""
    items = [ScoredItem(MemoryItem(f"text {i}", "turn", episode_id=s, source_ids=[f"t{i}"]), 1.0 / (i + 1))
             for i, s in enumerate(sessions)]
    return lambda q, top_k, context_budget: Retrieval(q, items[:top_k])


def test_the_diagnosis_read_records_the_gold_sessions_rank():
    # Sessions in order of their best item: A (1), B (2), C (3), D (5). The gold is t6, of session A.
    read = _read(["A", "B", "C", "A", "D", "B", "A", "C"])
    facts = gold_rank(read, Query("q"), ["t6"], top_k=2, read_items=2)
    assert facts["gold_rank"] == 7 and facts["gold_session_rank"] == 1
    # Without session D's item (rank 5), the gold is 6th among the first three sessions' items.
    assert TOP_SESSIONS == 3 and facts["gold_rank_in_sessions"] == 6
    assert gold_rank(read, Query("q"), ["t4"], 2, 2)["gold_session_rank"] == 4  # D: the 4th session
    assert "gold_session_rank" not in gold_rank(read, Query("q"), ["nowhere"], 2, 2)  # not found


def _failures(pairs: list[tuple[int, int]], read_items: int = 4, arch: Architecture = BASE) -> TrialResult:
    outcomes = [QueryOutcome(f"q{i}", 0.0, False, attribution="retrieve",
                             evidence={"gold_rank": 9, "rank_depth": 20, "read_items": read_items, "top_k": 4,
                                       "gold_session_rank": s, "gold_rank_in_sessions": r})
                for i, (s, r) in enumerate(pairs)]
    outcomes.append(QueryOutcome("ok", 1.0, True))
    return TrialResult(arch, "crafted", "search", 1 / len(outcomes), outcomes=outcomes)


def test_session_move_when_other_sessions_pushed_the_gold_out(full):
    # q0, q1: the gold's session 1st/3rd and the gold 3rd/4th of those sessions' items (kept in 4);
    # q2: session 5th; q3: session 2nd but the gold 7th even among its sessions' items.
    result = _failures([(1, 3), (3, 4), (5, 2), (2, 7)])
    move = session_move(result, full)
    assert move is not None and (move.key, move.before, move.after) == ("retrieve", "hybrid", "session")
    assert move.text == ("retrieve: hybrid -> session: 50% of the retrieve failures (2 of 4) had the gold's "
                         "session among the first 3 and the gold within the context once the other sessions' "
                         "items are dropped")
    assert move.evidence_ids == ["q0", "q1"]
    assert session_move(expand(result.architecture, compact(result)), full) is not None  # kept when stored
    _, [proposal] = numeric_proposals(full, result, set())
    arch = proposal.architecture
    assert arch.retrieve == "session" and proposal.role == "exploit" and proposal.reason == move.text
    # the shared levers and top_k stay; hybrid's own dense_weight is not carried into the session's
    assert arch.param_dict == {"retrieve.top_k": 4, "retrieve.pack": 1, "retrieve.time_weight": 1.0}
    assert proposal.edit.startswith("retrieve: hybrid -> session")
    assert session_move(_failures([(5, 2), (2, 7), (1, 9)]), full) is None  # too little evidence
    reading = _failures([(1, 3), (3, 4)], arch=arch)
    assert session_move(reading, full) is None  # reads sessions first already
    no_sessions = _failures([(1, 3)])
    for o in no_sessions.outcomes:
        o.evidence.pop("gold_session_rank", None)
    assert session_move(no_sessions, full) is None  # an agent task's items have no sessions


def test_a_refuted_move_is_not_repeated_and_the_knob_steps_the_other_way(full):
    result = _failures([(1, 3), (3, 4)])
    _, [proposal] = numeric_proposals(full, result, set())
    # The same move refuted from another parent: not proposed again, a coordinate step instead.
    dead = Ledger([LedgerEntry("other", proposal.edit, {"parent_trial": 0, "delta": -0.03}, REFUTED)]).dead_ends()
    _, [step] = numeric_proposals(full, result, set(), dead_ends=dead)
    assert step.architecture.retrieve == "hybrid" and step.role == "explore"
    # A knob change that hurt: never repeated, and the steps on its side come last (top_k alone here).
    leader = _failures([(9, 9)])
    others = {key for _, key, _ in full.chosen_knobs(full.to_params(BASE)) if key != "retrieve.top_k"}
    _, [first] = numeric_proposals(full, leader, set(), inert_knobs=others)
    assert first.edit == "retrieve.top_k: 4 -> 8"
    for hurt, expected in (("retrieve.top_k: 4 -> 8", "retrieve.top_k: 4 -> 2"),    # the same step
                           ("retrieve.top_k: 4 -> 16", "retrieve.top_k: 4 -> 2"),   # a longer one, same side
                           ("retrieve.top_k: 4 -> 1", "retrieve.top_k: 4 -> 8"),    # the other side
                           ("retrieve.top_k: 8 -> 16", "retrieve.top_k: 4 -> 8")):  # from another value
        dead = Ledger([LedgerEntry("other", hurt, {"parent_trial": 0, "delta": -0.02}, REFUTED)]).dead_ends()
        _, [back] = numeric_proposals(full, leader, set(), inert_knobs=others, dead_ends=dead)
        assert back.edit == expected, hurt

"""The guided search's numeric moves from crafted traces: the trace-backed top_k, pack and time moves,
coordinate steps (narrow int knobs by one unit, the shared levers still off first, inert knobs
never), and the evidence a stored trial keeps for them."""
from __future__ import annotations

import pytest

from memarch.optimizers.samplers.guided.numeric import numeric_proposals, pack_move, time_move, top_k_move
from memarch.optimizers.search.param_space import steps
from memarch.optimizers.search.param_space import ParamSpace
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.space import ArchitectureSpace
from memarch.pipeline.trial import QueryOutcome, TrialResult

BASE = Architecture(("turn",), "vector", "hybrid", "lightweight")


@pytest.fixture(scope="module")
def full() -> ParamSpace:
    return ParamSpace(ArchitectureSpace("conversation", lm_available=False), "full")


def _trace(ranks: list[int | None], read_items: int = 4, top_k: int = 4) -> TrialResult:
    arch = BASE.replace(params={"retrieve.top_k": top_k})
    outcomes = [QueryOutcome(f"q{i}", 0.0, False, attribution="retrieve",
                             evidence={"gold_rank": r, "rank_depth": 20, "read_items": read_items, "top_k": top_k})
                for i, r in enumerate(ranks)]
    outcomes.append(QueryOutcome("ok", 1.0, True))
    outcomes.append(QueryOutcome("enc", 0.0, False, attribution="encode"))
    return TrialResult(arch, "crafted", "search", 1 / len(outcomes), outcomes=outcomes)


def test_numeric_move_gradient_from_a_crafted_trace(full):
    # 13 retrieve failures: 4 with the gold at rank 5-8 (31%), the rest deeper or not found.
    result = _trace([5, 6, 8, 7, 12, 15, None, None, 20, 9, 10, None, 11])
    move = top_k_move(result, full)
    assert move is not None and (move.key, move.before, move.after) == ("retrieve.top_k", 4, 8)
    assert move.text == ("retrieve.top_k 4 -> 8: 31% of the retrieve failures (4 of 13) had the gold item at "
                         "rank 5-8")
    assert move.evidence_ids == ["q0", "q1", "q2", "q3"]
    _, [proposal] = numeric_proposals(full, result, set())
    assert proposal.architecture.param_dict == {"retrieve.top_k": 8} and proposal.reason == move.text
    # Reads the context budget cut short (fewer items than top_k): more items would not be read.
    assert top_k_move(_trace([5, 6, 7, 8], read_items=3), full) is None
    assert top_k_move(_trace([9, 12, None]), full) is None  # the gold is deeper than 2 x top_k
    # Without a backed move, one untried coordinate step of a knob of the leader.
    # The shared levers still off come first (packing, time-aware, ...), then the module's own knobs.
    _, [step] = numeric_proposals(full, _trace([None]), {proposal.architecture.key()}, primary="retrieve")
    assert step.role == "explore" and step.edit == "retrieve.pack: 0 -> 1"
    leader = _trace([None])
    leader.architecture = leader.architecture.replace(params={"retrieve.top_k": 4, "retrieve.pack": 1,
                                                              "retrieve.pack_order": 1, "retrieve.pack_compact": 1,
                                                              "retrieve.time_weight": 1.0,
                                                              "retrieve.recency_weight": 0.5,
                                                              "retrieve.entity_weight": 0.5})
    blocked = {proposal.architecture.key()}
    edits = []
    for _ in range(3):
        _, [step] = numeric_proposals(full, leader, blocked, primary="retrieve")
        blocked.add(step.architecture.key())
        edits.append(step.edit)
    shared = ("retrieve.pack", "retrieve.time_weight", "retrieve.recency_weight", "retrieve.entity_weight",
              "retrieve.aware_pool")
    assert edits[0] == "retrieve.pack: 1 -> 2" and all(e.startswith(shared) for e in edits), edits


def test_a_narrow_int_knob_steps_by_at_least_one_unit():
    from memarch.pipeline.knobs import Knob

    assert steps(Knob("pack", "int", 0, 2, default=0), 0) == [1]
    assert steps(Knob("pack", "int", 0, 2, default=0), 1) == [2, 0]
    assert steps(Knob("w", "int", 1, 3, default=1), 1) == [2]
    assert steps(Knob("k", "int", 2, 64, log=True, default=20), 20) == [40, 10]


def test_a_stored_trial_keeps_what_the_numeric_moves_read(full):
    from memarch.optimizers.search.history import compact, expand

    result = _trace([9, 12, 20, 15], read_items=8, top_k=20)
    for o in result.outcomes:  # a LoCoMo failure's evidence: many scores before the diagnosis keys
        o.evidence = {"question": "q?", "gold_answer": "a", "answer_span": 0.0, "answer_recall": 0.5,
                      "evidence_recall": 0.0, "gold": ["D1:1"], "retrieved_sources": [], "lost": {"D1:1": "retrieve"},
                      "encoded": ["D1:1"], "stored": ["D1:1"], **o.evidence, "hit@1": 0.0, "mrr": 0.1}
    again = expand(result.architecture, compact(result))
    assert [o.evidence.get("gold_rank") for o in again.outcomes] == [o.evidence.get("gold_rank")
                                                                      for o in result.outcomes]
    assert pack_move(again, full) is not None  # the move reads a stored trial as it reads a fresh one


def test_pack_move_when_the_gold_was_ranked_but_cut_by_the_budget(full):
    # top_k 20, the budget fitted 8 items: 5 of 8 retrieve failures had the gold at rank 9-20.
    result = _trace([9, 12, 20, 15, 10, 25, None, 3], read_items=8, top_k=20)
    move = pack_move(result, full)
    assert move is not None and (move.key, move.before, move.after) == ("retrieve.pack", 0, 1)
    assert move.text == ("retrieve.pack items -> sentences: 62% of the retrieve failures (5 of 8) had the gold "
                         "item ranked within top_k but cut by the context budget")
    assert top_k_move(result, full) is None  # top_k did not cut these reads: the budget did
    _, [proposal] = numeric_proposals(full, result, set())
    assert proposal.architecture.param_dict == {"retrieve.pack": 1}  # top_k 20 is the default
    assert proposal.role == "exploit" and proposal.edit == "retrieve.pack: 0 -> 1"
    # already packing sentences: the same evidence switches compact lines on; then no move
    packed = _trace([9, 12, 20, 15], read_items=8, top_k=20)
    packed.architecture = packed.architecture.replace(params={"retrieve.top_k": 20, "retrieve.pack": 1})
    compact = pack_move(packed, full)
    assert compact is not None and (compact.key, compact.before, compact.after) == ("retrieve.pack_compact", 0, 1)
    assert compact.text.startswith("retrieve.pack_compact 0 -> 1 (compact lines): 100% of the retrieve failures")
    packed.architecture = packed.architecture.replace(params={"retrieve.pack": 1, "retrieve.pack_compact": 1})
    assert pack_move(packed, full) is None
    packed.architecture = packed.architecture.replace(params={"retrieve.pack": 2})  # the window packer
    assert pack_move(packed, full) is None
    assert pack_move(_trace([25, 30, None, None], read_items=8, top_k=20), full) is None


def test_time_move_when_the_failures_asked_about_a_time(full):
    questions = ["When did Ann move to Lisbon?", "What did Ann do in May 2023?", "What is Ann's job?",
                 "Where does Bob live?", "When is the party?"]
    result = _trace([None] * len(questions))
    for o, q in zip(result.outcomes, questions):
        o.evidence["question"] = q
    move = time_move(result, full)
    assert move is not None and (move.key, move.before, move.after) == ("retrieve.time_weight", 0, 1.0)
    assert move.text == ("retrieve.time_weight 0 -> 1: 60% of the retrieve failures (3 of 5) asked about a "
                         "time (when, or a named period)")
    assert move.evidence_ids == ["q0", "q1", "q4"]
    _, [proposal] = numeric_proposals(full, result, set())
    assert proposal.architecture.param_dict == {"retrieve.top_k": 4, "retrieve.time_weight": 1.0}
    timed = _trace([None, None])
    timed.architecture = timed.architecture.replace(params={"retrieve.time_weight": 0.5})
    for o in timed.outcomes:
        o.evidence["question"] = "When did it happen?"
    assert time_move(timed, full) is None  # time-aware already


def test_knobs_whose_moves_changed_nothing_are_not_stepped_again(full):
    from memarch.optimizers.samplers.guided.ledger import INERT, Ledger, LedgerEntry

    ledger = Ledger([LedgerEntry("p", "retrieve.top_k: 4 -> 8", {"parent_trial": 0}, INERT),
                     LedgerEntry("p", "retrieve.pool: 50 -> 100", {"parent_trial": 0}, INERT),
                     LedgerEntry("p", "retrieve.pool: 50 -> 25", {"parent_trial": 0}, "refuted"),
                     LedgerEntry("p", "retrieve: hybrid -> mmr", {"parent_trial": 0}, INERT)])
    assert ledger.inert_knobs() == {"retrieve.top_k"} and ledger.inert_fields() == set()
    # (the shared levers, stepped first otherwise, set aside: the module's own knobs are the point here)
    shared = {key for _, key, knob in full.chosen_knobs(full.to_params(BASE)) if knob.group}
    _, [step] = numeric_proposals(full, _trace([None]), set(), primary="retrieve",
                                  inert_knobs=ledger.inert_knobs() | shared)
    assert step.edit == "retrieve.pool: 50 -> 100"


def _sides(pairs: list[tuple[int | None, int | None]], top_k: int = 4) -> TrialResult:
    result = _trace([None] * len(pairs), top_k=top_k)
    for o, (dense, lexical) in zip(result.outcomes, pairs):
        o.evidence.update(gold_dense_rank=dense, gold_lexical_rank=lexical)
    return result


def test_fusion_move_when_the_sides_disagree_on_the_gold(full):
    from memarch.optimizers.samplers.guided.numeric import fusion_move
    from memarch.optimizers.search.history import compact, expand

    # top_k 4: q0 dense 2 / lexical none, q1 lexical 1 / dense 30, q2 both deep, q3 both within top_k
    result = _sides([(2, None), (30, 1), (40, 50), (3, 2)])
    move = fusion_move(result, full)
    assert move is not None and (move.key, move.before, move.after) == ("retrieve.fusion", 0, 1)
    assert move.text == ("retrieve.fusion rrf -> zscore: 50% of the retrieve failures (2 of 4) had one side "
                         "rank the gold within top_k and the other not")
    assert move.evidence_ids == ["q0", "q1"]
    _, [proposal] = numeric_proposals(full, result, set())
    assert proposal.architecture.param_dict == {"retrieve.top_k": 4, "retrieve.fusion": 1}
    assert fusion_move(expand(result.architecture, compact(result)), full) is not None  # kept when stored
    assert fusion_move(_sides([(40, 50), (3, 2), (None, None)]), full) is None  # the sides agree
    zscored = _sides([(2, None), (30, 1)])
    zscored.architecture = zscored.architecture.replace(params={"retrieve.fusion": 1})
    assert fusion_move(zscored, full) is None  # fuses by z-scores already
    assert fusion_move(_trace([None, None]), full) is None  # no side ranks recorded (not a fusing retriever)

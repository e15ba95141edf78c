"""The guided moves LongMemEval's traces ask for, from crafted traces: the recency prior for
questions about the present (knowledge updates: "my current score", "do I still ..."), and the
dense side's weight when it had the gold and the lexical side not (preferences: a request that
shares no words with what it recalls) — or the lexical side's, the other way; each proposed only on
enough evidence, never past the knob's bound, and kept by a stored trial."""
from __future__ import annotations

import pytest

from memarch.modules.retrievers import asks_about_present
from memarch.optimizers.samplers.guided.numeric import dense_weight_move, numeric_proposals, recency_move
from memarch.optimizers.search.history import compact, expand
from memarch.optimizers.search.param_space import ParamSpace
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.space import ArchitectureSpace
from memarch.pipeline.trial import QueryOutcome, TrialResult

# pack, fusion and the time side on: the moves that come first in the order are spent
BASE = Architecture(("turn",), "vector", "hybrid", "lightweight",
                    params={"retrieve.top_k": 4, "retrieve.pack": 1, "retrieve.pack_compact": 1,
                            "retrieve.fusion": 1, "retrieve.time_weight": 1.0})


@pytest.fixture(scope="module")
def full() -> ParamSpace:
    return ParamSpace(ArchitectureSpace("conversation", lm_available=False), "full")


def _failures(evidence: list[dict], arch: Architecture = BASE) -> TrialResult:
    outcomes = [QueryOutcome(f"q{i}", 0.0, False, attribution="retrieve",
                             evidence={"gold_rank": None, "rank_depth": 20, "read_items": 2, "top_k": 4, **e})
                for i, e in enumerate(evidence)]
    outcomes.append(QueryOutcome("ok", 1.0, True))
    return TrialResult(arch, "crafted", "search", 1 / len(outcomes), outcomes=outcomes)


def test_questions_about_the_present():
    for q in ("What is my current highest score in Ticket to Ride?", "How many followers do I currently have?",
              "How many pages have I read so far?", "Do I still play the piano?", "What's my latest order?",
              "Where do I live now?", "Is she at the moment in Rome?"):
        assert asks_about_present(q), q
    for q in ("Where did I initially keep my sneakers?", "When did Ann move?", "What is Ann's job?",
              "Did I know anyone there?", "Which book did I finish a week ago?"):
        assert not asks_about_present(q), q


def test_recency_move_when_the_failures_asked_about_the_present(full):
    questions = ["What is my current score?", "How many do I have so far?", "Where does Bob live?",
                 "What did Ann cook?", "Do I still run?"]
    result = _failures([{"question": q} for q in questions])
    move = recency_move(result, full)
    assert move is not None and (move.key, move.before, move.after) == ("retrieve.recency_weight", 0, 0.5)
    assert move.text == ("retrieve.recency_weight 0 -> 0.5: 60% of the retrieve failures (3 of 5) asked about "
                         "the present (current, still, so far, latest)")
    assert move.evidence_ids == ["q0", "q1", "q4"]
    _, [proposal] = numeric_proposals(full, result, set())
    assert proposal.architecture.param_dict["retrieve.recency_weight"] == 0.5 and proposal.role == "exploit"
    assert recency_move(expand(result.architecture, compact(result)), full) is not None  # kept when stored
    assert recency_move(_failures([{"question": "What is my current job?"}] + [{"question": "Who?"}] * 5),
                        full) is None  # one hit: too little evidence
    prior = BASE.replace(params={**BASE.param_dict, "retrieve.recency_weight": 0.25})
    assert recency_move(_failures([{"question": q} for q in questions], arch=prior), full) is None  # on already


def _sides(pairs: list[tuple[int | None, int | None]], arch: Architecture = BASE) -> TrialResult:
    return _failures([{"gold_dense_rank": d, "gold_lexical_rank": lx} for d, lx in pairs], arch)


def test_dense_weight_up_when_the_dense_side_had_the_gold(full):
    # q0 dense 1 / lexical none, q1 dense 2 / lexical 9: dense had it; q2 both had it; q3 neither; q4 lexical had it
    result = _sides([(1, None), (2, 9), (1, 2), (15, None), (20, 1)])
    move = dense_weight_move(result, full)
    assert move is not None and (move.key, move.before, move.after) == ("retrieve.dense_weight", 1.0, 2.0)
    assert move.text == ("retrieve.dense_weight 1 -> 2: 40% of the retrieve failures (2 of 5) had the dense side "
                         "rank the gold in its top 3 and the lexical side not")
    assert move.evidence_ids == ["q0", "q1"]
    _, [proposal] = numeric_proposals(full, result, set())
    assert proposal.architecture.param_dict["retrieve.dense_weight"] == 2.0
    assert proposal.edit == "retrieve.dense_weight: 1.0 -> 2.0"
    assert dense_weight_move(expand(result.architecture, compact(result)), full) is not None


def test_dense_weight_down_when_the_lexical_side_had_it_and_bounded(full):
    result = _sides([(None, 1), (30, 2), (2, None), (9, 9)])
    move = dense_weight_move(result, full)
    assert move is not None and (move.before, move.after) == (1.0, 0.5)
    assert "had the lexical side rank the gold in its top 3 and the dense side not" in move.text
    top = BASE.replace(params={**BASE.param_dict, "retrieve.dense_weight": 4.0})  # the knob's high bound
    assert dense_weight_move(_sides([(1, None), (2, None)], arch=top), full) is None
    assert dense_weight_move(_sides([(1, None), (9, 9), (9, 9), (9, 9), (9, 9), (9, 9)]), full) is None  # 1 hit
    no_sides = _failures([{}, {}])  # not a fusing retriever: no side ranks recorded
    assert dense_weight_move(no_sides, full) is None
    contrastive = Architecture(("turn",), "vector", "contrastive", "lightweight")
    assert dense_weight_move(_sides([(1, None), (2, None)], arch=contrastive), full) is None  # no such knob


def test_the_earlier_moves_keep_their_place(full):
    """A leader that does not pack yet gets the pack move first, whatever the sides say."""
    plain = Architecture(("turn",), "vector", "hybrid", "lightweight", params={"retrieve.top_k": 4})
    result = _sides([(1, None), (2, None), (1, None)], arch=plain)
    for o in result.outcomes[:3]:
        o.evidence.update(gold_rank=3, read_items=2)
    move, [proposal] = numeric_proposals(full, result, set())
    assert move.key == "retrieve.pack" and proposal.edit == "retrieve.pack: 0 -> 1"

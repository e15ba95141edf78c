"""The guided search reaches the session retriever's ``stem`` knob from traces: the diagnosis read
records how many question words match the gold item only as stems (hand-checked), and
``retrieve.stem 0 -> 1`` is proposed when enough retrieve failures had one; never for a leader that
stems already or whose retriever has no such knob; and the evidence survives a stored trial."""
from __future__ import annotations

import pytest

from memarch.benchmarks.evaluation.attribution import gold_rank
from memarch.modules.stores.lexical import stem_only_terms
from memarch.optimizers.samplers.guided.numeric import numeric_proposals, stem_move
from memarch.optimizers.search.history import compact, expand
from memarch.optimizers.search.param_space import ParamSpace
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.episodes import Query
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.retrieval import Retrieval, ScoredItem
from memarch.pipeline.space import ArchitectureSpace
from memarch.pipeline.trial import QueryOutcome, TrialResult

SESSION = Architecture(("turn",), "vector", "session", "lightweight", params={"retrieve.top_k": 4})


@pytest.fixture(scope="module")
def full() -> ParamSpace:
    return ParamSpace(ArchitectureSpace("conversation", lm_available=False), "full")


def test_stem_only_terms_by_hand():
    # "paintings" -> "paint" (the text has "painted": a stem match only); "sunset" is in the text as
    # a token; "caroline" not at all; stopwords ("what", "did") are never terms.
    assert stem_only_terms("What paintings did Caroline make of the sunset?",
                           "She painted a sunset last week") == ["paintings"]
    assert stem_only_terms("sunset", "a sunset") == []


def test_the_diagnosis_read_records_stem_only_words():
    items = [ScoredItem(MemoryItem("I went running", "turn", episode_id="A", source_ids=["t0"]), 1.0),
             ScoredItem(MemoryItem("She painted two lakes", "turn", episode_id="B", source_ids=["t1"]), 0.5)]
    read = lambda q, top_k, context_budget: Retrieval(q, items[:top_k])  # noqa: E731
    facts = gold_rank(read, Query("which paintings of lakes"), ["t1"], top_k=1, read_items=1)
    assert facts["gold_rank"] == 2 and facts["gold_stem_only"] == 1  # "paintings" (lakes matches as a token)
    assert "gold_stem_only" not in gold_rank(read, Query("paintings"), ["nowhere"], 1, 1)  # gold not found


def _failures(stem_only: list[int], arch: Architecture = SESSION) -> TrialResult:
    outcomes = [QueryOutcome(f"q{i}", 0.0, False, attribution="retrieve",
                             evidence={"gold_rank": 9, "rank_depth": 20, "read_items": 4, "top_k": 4,
                                       "gold_stem_only": n})
                for i, n in enumerate(stem_only)]
    outcomes.append(QueryOutcome("ok", 1.0, True))
    return TrialResult(arch, "crafted", "search", 1 / len(outcomes), outcomes=outcomes)


def test_stem_move_when_the_gold_matched_only_as_stems(full):
    result = _failures([2, 1, 0, 0, 0])
    move = stem_move(result, full)
    assert move is not None and (move.key, move.before, move.after) == ("retrieve.stem", 0, 1)
    assert move.text == ("retrieve.stem 0 -> 1: 40% of the retrieve failures (2 of 5) had a question word "
                         "matching the gold item only as a stem (another word form)")
    assert move.evidence_ids == ["q0", "q1"]
    assert stem_move(expand(result.architecture, compact(result)), full) is not None  # kept when stored
    _, [proposal] = numeric_proposals(full, result, set())
    assert proposal.architecture.param_dict.get("retrieve.stem") == 1 and proposal.role == "exploit"
    assert proposal.edit == "retrieve.stem: 0 -> 1" and proposal.reason == move.text
    assert stem_move(_failures([1, 0, 0, 0, 0, 0]), full) is None  # one hit: too little evidence
    stems = SESSION.replace(params={**SESSION.param_dict, "retrieve.stem": 1})
    assert stem_move(_failures([2, 1, 3], arch=stems), full) is None  # stems already
    hybrid = Architecture(("turn",), "vector", "hybrid", "lightweight")
    assert stem_move(_failures([2, 1, 3], arch=hybrid), full) is None  # no stem knob on hybrid

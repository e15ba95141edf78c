"""Session-level retrieval metrics (session_hit@k, session_recall@k, session_ndcg@k for k 1/3/5/10,
session_mrr), the unit of the published LoCoMo retrieval numbers: gold = the sessions of the gold
evidence turns, a session ranked at its best item; computed by trec_eval like the turn-level ones
(hand-checked values, equal to a direct computation on random runs), in every stream trial overall
and per category, selectable as the metric (printed by `memarch evaluate`: tests/benchmarks/test_retrieval_metrics.py)."""
from __future__ import annotations

import math
import random

import pytest

from memarch.benchmarks.base import Benchmark, Dialogue, Question
from memarch.benchmarks.evaluation.evaluate import evaluate
from memarch.benchmarks.metrics.registry import METRICS, check_metric, explain_metric
from memarch.benchmarks.metrics.retrieval import (SESSION_METRICS, gold_sessions, ranked_sessions, ranked_turns,
                                                   retrieval_scores, retrieval_scores_many)
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.episodes import Episode, Turn
from memarch.pipeline.items import MemoryItem

SESSION_OF = {"D1:1": "s1", "D1:2": "s1", "D2:1": "s2", "D2:2": "s2", "D3:1": "s3"}


def test_names():
    assert SESSION_METRICS == ("session_hit@1", "session_hit@3", "session_hit@5", "session_hit@10",
                               "session_recall@1", "session_recall@3", "session_recall@5", "session_recall@10",
                               "session_ndcg@1", "session_ndcg@3", "session_ndcg@5", "session_ndcg@10",
                               "session_mrr")
    for m in SESSION_METRICS:
        assert m in METRICS and check_metric(m) == m and "session level" in explain_metric(m)


def test_a_session_ranks_at_its_best_item():
    items = [MemoryItem(text="a", kind="turn", source_ids=["D2:2"]),
             MemoryItem(text="b", kind="summary", source_ids=["D1:1", "D1:2"]),
             MemoryItem(text="c", kind="turn", source_ids=["D2:1"]),  # s2 again: keeps its first rank
             MemoryItem(text="d", kind="turn", source_ids=["X:9"]),  # no known session: left out
             MemoryItem(text="e", kind="turn", source_ids=["D3:1"])]
    assert ranked_sessions(ranked_turns(items), SESSION_OF) == ["s2", "s1", "s3"]
    assert gold_sessions(["D1:2", "D1:1", "D3:1", "nope"], SESSION_OF) == ["s1", "s3"]


def test_hand_checked():
    s = retrieval_scores(["s1"], ["s2", "s1", "s3"], SESSION_METRICS)
    assert s["session_hit@1"] == 0.0 and s["session_hit@3"] == 1.0 and s["session_mrr"] == pytest.approx(0.5)
    assert s["session_ndcg@3"] == pytest.approx(1 / math.log2(3))
    s = retrieval_scores(["s1", "s3"], ["s1", "s2", "s4", "s5", "s3"], SESSION_METRICS)
    assert s["session_recall@1"] == 0.5 and s["session_recall@3"] == 0.5 and s["session_recall@5"] == 1.0
    assert s["session_ndcg@5"] == pytest.approx((1 + 1 / math.log2(6)) / (1 + 1 / math.log2(3)))
    assert retrieval_scores([], ["s1"], SESSION_METRICS) is None


def _direct(gold: list[str], ranked: list[str], k: int) -> dict[str, float]:
    rel = [1.0 if s in gold else 0.0 for s in ranked]
    dcg = sum(r / math.log2(i + 2) for i, r in enumerate(rel[:k]))
    ideal = sum(1 / math.log2(i + 2) for i in range(min(k, len(gold))))
    first = next((i for i, r in enumerate(rel) if r), None)
    return {"hit": float(any(rel[:k])), "recall": sum(rel[:k]) / len(gold), "ndcg": dcg / ideal,
            "mrr": 0.0 if first is None else 1 / (first + 1)}


def test_equal_to_a_direct_computation_on_random_runs():
    rng = random.Random(7)
    sessions = [f"s{i}" for i in range(30)]
    questions = {}
    for q in range(200):
        ranked = rng.sample(sessions, rng.randint(0, 30))
        questions[f"q{q}"] = (rng.sample(sessions, rng.randint(1, 4)), ranked)
    ours = retrieval_scores_many(questions, SESSION_METRICS)
    for q, (gold, ranked) in questions.items():
        for m in SESSION_METRICS:
            name, _, k = m.removeprefix("session_").partition("@")
            expected = _direct(gold, ranked, int(k) if k else 1)[name]
            assert ours[q][m] == pytest.approx(expected, abs=1e-9), (q, m)


class _Bench(Benchmark):
    name = "tiny-sessions"


def _bench() -> _Bench:
    sessions = []
    for s, lines in enumerate([["I adopted a dog called Rex.", "He is a beagle."],
                               ["My sister lives in Lisbon.", "She is a teacher."],
                               ["We painted the kitchen blue.", "It took two days."]], start=1):
        turns = [Turn(f"D{s}:{i + 1}", "Ann", t) for i, t in enumerate(lines)]
        sessions.append(Episode(id=f"n1/session_{s}", namespace="n1", turns=turns))
    qs = [Question("n1/dog", "What is my dog called?", "Rex", ["D1:1"], "single-hop"),
          Question("n1/sister", "Where does my sister live?", "Lisbon", ["D2:1"], "single-hop"),
          Question("n1/both", "What is the dog's breed and the kitchen's colour?", "blue", ["D1:2", "D3:1"],
                   "multi-hop"),
          Question("n1/none", "What is my job?", "nurse", [], "temporal")]  # no evidence: skipped
    return _Bench([Dialogue("n1", sessions, qs)])


def test_every_stream_trial_has_them_overall_and_per_category(hash_resources):
    arch = Architecture(("turn",), "vector", "hybrid", "lightweight")
    result = evaluate(arch, _bench(), split="all", resources=hash_resources)
    assert not result.failed, result.error
    scored = [o for o in result.outcomes if not o.evidence.get("retrieval_skipped")]
    assert len(scored) == 3 and result.scores["retrieval_skipped"] == 1.0
    for o in scored:
        assert set(SESSION_METRICS) <= set(o.evidence)
        assert o.evidence["session_hit@1"] <= o.evidence["session_hit@3"] <= o.evidence["session_hit@10"]
        if o.category == "single-hop":  # one gold session: NDCG@1 is Hit@1, MRR is 1 / its rank
            assert o.evidence["session_ndcg@1"] == o.evidence["session_hit@1"]
            assert 1 / o.evidence["session_mrr"] in (1.0, 2.0, 3.0)
    for m in SESSION_METRICS:
        assert result.scores[m] == pytest.approx(sum(o.evidence[m] for o in scored) / 3)
    per_cat = result.metadata["retrieval_per_category"]
    assert per_cat["multi-hop"]["session_recall@10"] == next(o.evidence["session_recall@10"] for o in scored
                                                             if o.category == "multi-hop")
    # three sessions in all: every gold session is within the first 3 covered ones
    assert all(o.evidence["session_recall@3"] == 1.0 for o in scored)


def test_selectable_as_the_metric(hash_resources):
    arch = Architecture(("turn",), "vector", "hybrid", "lightweight")
    result = evaluate(arch, _bench(), split="all", resources=hash_resources, metric="session_hit@1")
    assert result.metadata["metric"] == "session_hit@1"
    scored = [o for o in result.outcomes if not o.evidence.get("retrieval_skipped")]
    assert [o.score for o in scored] == [o.evidence["session_hit@1"] for o in scored]


@pytest.mark.integration
def test_locomo_category_mapping_is_pinned_by_the_data(data_dir):
    """memarch's LoCoMo mapping (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial),
    checked against what the data itself shows (the published code labels the ids two ways)."""
    from memarch.benchmarks import get_benchmark
    from memarch.benchmarks.locomo import CATEGORIES

    assert CATEGORIES == {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
    bench = get_benchmark("locomo", data_dir / "locomo")
    qs = [(d, q) for d in bench.dialogues for q in d.questions]
    by = {c: [(d, q) for d, q in qs if q.category == c] for c in CATEGORIES.values()}
    assert {c: len(v) for c, v in by.items()} == {"multi-hop": 282, "temporal": 321, "open-domain": 96,
                                                   "single-hop": 841, "adversarial": 446}
    def when(c):
        return sum(q.text.lower().startswith("when") for _, q in by[c]) / len(by[c])

    assert when("temporal") > 0.7  # temporal: "When did ...?" (76.6%), and no other category comes close
    assert all(when("temporal") > 3 * when(c) for c in by if c != "temporal")
    assert all(q.answer is None and "adversarial_answer" in q.metadata for _, q in by["adversarial"])

    def sessions_per_question(pairs):
        spans = []
        for d, q in pairs:
            of = {t.id: s.id for s in d.sessions for t in s.turns}
            spans.append(len(gold_sessions(q.evidence, of)))
        return sum(spans) / len(spans)

    assert sessions_per_question(by["multi-hop"]) > 2 * sessions_per_question(by["single-hop"])

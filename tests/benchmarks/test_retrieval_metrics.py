"""The turn-level retrieval metrics (hit@k, recall@k, ndcg@k, mrr over the gold evidence ids),
computed by trec_eval: equal to ranx's computation (the library used before; a dev dependency kept
for this check) on a crafted run and on every question of real LoCoMo reads, and to hand-checked
values on a tiny one; the
ranked turns of a retrieval (first covering item, deduplicated); questions without evidence
skipped and counted; overall and per-category values in a trial; selectable as the objective."""
from __future__ import annotations

import math

import pytest

from memarch.benchmarks.base import Benchmark, Dialogue, Question
from memarch.benchmarks.evaluation.evaluate import evaluate
from memarch.benchmarks.metrics.registry import METRICS, check_metric, explain_metric
from memarch.benchmarks.metrics.retrieval import (RETRIEVAL_METRICS, ranked_turns, retrieval_scores,
                                                   retrieval_scores_many)
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.episodes import Episode, Turn
from memarch.pipeline.items import MemoryItem

import ranx  # noqa: E402  (a dev dependency: what the values were computed by before trec_eval)

CRAFTED = {  # qid -> (gold evidence ids, ranked covered turn ids)
    "q1": (["D1:3"], ["D1:1", "D1:3", "D1:2"]),
    "q2": (["D1:1", "D2:4"], ["D2:4", "D1:9", "D1:8", "D1:7", "D1:6", "D1:5", "D1:1"]),
    "q3": (["D3:1"], ["D1:1", "D1:2"]),
    "q4": (["D1:1", "D1:2", "D1:3"], ["D1:2"] + [f"D9:{i}" for i in range(12)] + ["D1:1"]),
}


def test_equal_to_ranx_on_a_crafted_run():
    qrels = ranx.Qrels({q: {g: 1 for g in gold} for q, (gold, _) in CRAFTED.items()})
    run = ranx.Run({q: {t: 100.0 - i for i, t in enumerate(ranked)} for q, (_, ranked) in CRAFTED.items()})
    names = {m: m.replace("hit@", "hit_rate@") for m in RETRIEVAL_METRICS}
    expected = ranx.evaluate(qrels, run, list(names.values()), return_mean=False, make_comparable=True)
    ours = retrieval_scores_many(CRAFTED)
    for i, q in enumerate(sorted(CRAFTED)):
        for m, r in names.items():
            assert ours[q][m] == pytest.approx(float(expected[r][i])), (q, m)
    means = ranx.evaluate(qrels, run, list(names.values()))
    for m, r in names.items():
        assert sum(ours[q][m] for q in CRAFTED) / len(CRAFTED) == pytest.approx(float(means[r]))


def _ranx_values(questions: dict) -> dict:
    qrels = ranx.Qrels({q: {g: 1 for g in gold} for q, (gold, _) in questions.items()})
    run = ranx.Run({q: ({t: float(len(r) - i) for i, t in enumerate(r)} or {"\x00no-turn": 0.0})
                    for q, (_, r) in questions.items()})
    names = {m: m.replace("hit@", "hit_rate@") for m in RETRIEVAL_METRICS}
    values = ranx.evaluate(qrels, run, list(names.values()), return_mean=False, make_comparable=True)
    return {q: {m: float(values[r][i]) for m, r in names.items()} for i, q in enumerate(sorted(questions))}


@pytest.mark.integration
def test_equal_to_ranx_on_every_question_of_real_reads(data_dir, hash_resources, monkeypatch):
    """Every (gold, ranked turns) that three LoCoMo evaluations score: trec_eval's values equal
    ranx's to 1e-9 (measured: exactly equal on 3,313 real and synthetic questions)."""
    import memarch.benchmarks.evaluation.question_scoring as scoring
    from memarch.benchmarks import get_benchmark
    from memarch.pipeline.presets import presets_for
    from memarch.pipeline.space import ArchitectureSpace

    seen = {}

    def recording(questions, metrics=RETRIEVAL_METRICS):
        seen.update({f"{len(seen)}-{q}": (list(g), list(r)) for q, (g, r) in questions.items() if list(g)})
        return retrieval_scores_many(questions, metrics)

    monkeypatch.setattr(scoring, "retrieval_scores_many", recording)
    bench = get_benchmark("locomo", data_dir / "locomo")
    presets = presets_for(ArchitectureSpace("conversation"))
    for name in ("mem0", "memgpt", "zep"):
        evaluate(presets[name], bench, split="validation", resources=hash_resources, limit=200)
    assert len(seen) >= 300
    ours, theirs = retrieval_scores_many(seen), _ranx_values(seen)
    worst = max(abs(ours[q][m] - theirs[q][m]) for q in seen for m in RETRIEVAL_METRICS)
    assert worst <= 1e-9, worst


def test_hand_checked_tiny_example():
    s = retrieval_scores(["t2"], ["t1", "t2", "t3"])  # one relevant turn, at rank 2
    assert s["hit@1"] == 0.0 and s["hit@5"] == 1.0 and s["hit@10"] == 1.0
    assert s["mrr"] == pytest.approx(1 / 2)
    assert s["ndcg@5"] == pytest.approx(1 / math.log2(3))
    assert s["ndcg@1"] == 0.0 and s["recall@1"] == 0.0 and s["recall@5"] == 1.0
    s = retrieval_scores(["t1"], ["t1"])
    assert all(s[m] == 1.0 for m in RETRIEVAL_METRICS)
    s = retrieval_scores(["a", "b"], ["x", "a", "y", "z", "w", "v", "b"])
    assert s["recall@5"] == 0.5 and s["recall@10"] == 1.0 and s["mrr"] == pytest.approx(1 / 2)
    assert s["ndcg@10"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(8)) / (1 + 1 / math.log2(3)))
    assert retrieval_scores(["t1"], []) == {m: 0.0 for m in RETRIEVAL_METRICS}  # nothing covered
    assert retrieval_scores([], ["t1"]) is None  # no gold: skipped


def test_ranked_turns_first_covering_item_deduplicated():
    items = [MemoryItem(text="a", kind="turn", source_ids=["D1:2", "D1:1"]), MemoryItem(text="b", kind="turn", source_ids=["D1:1"]),
             MemoryItem(text="c", kind="turn", source_ids=[]), MemoryItem(text="d", kind="turn", source_ids=["D1:5"])]
    assert ranked_turns(items) == ["D1:2", "D1:1", "D1:5"]


def test_registry_names_and_objective():
    for m in ("hit@1", "hit@5", "hit@10", "recall@10", "ndcg@5", "mrr"):
        assert m in METRICS and check_metric(m) == m and "turn level" in explain_metric(m)


class _Bench(Benchmark):
    name = "tiny"


def _tiny_bench() -> _Bench:
    lines = ["I adopted a dog called Rex.", "My sister lives in Lisbon.", "I work as a nurse.",
             "We painted the kitchen blue.", "Rex loves the beach."]
    turns = [Turn(f"D1:{i + 1}", "Ann", t) for i, t in enumerate(lines)]
    session = Episode(id="n1/s1", namespace="n1", turns=turns)
    qs = [Question("n1/dog", "What is my dog called?", "Rex", ["D1:1"], "single-hop"),
          Question("n1/sister", "Where does my sister live?", "Lisbon", ["D1:2"], "single-hop"),
          Question("n1/kitchen", "What colour is the kitchen?", "blue", ["D1:4"], "temporal"),
          Question("n1/job", "What is my job?", "nurse", [], "temporal")]  # no evidence: skipped
    return _Bench([Dialogue("n1", [session], qs)])


def test_trial_scores_per_category_and_skipped(hash_resources):
    arch = Architecture(("turn",), "vector", "hybrid", "lightweight")
    result = evaluate(arch, _tiny_bench(), split="all", resources=hash_resources, metric="ndcg@5")
    assert not result.failed, result.error
    assert result.scores["retrieval_skipped"] == 1.0 and result.scores["questions"] == 4.0
    scored = [o for o in result.outcomes if not o.evidence.get("retrieval_skipped")]
    assert len(scored) == 3
    for m in RETRIEVAL_METRICS:
        assert result.scores[m] == pytest.approx(sum(o.evidence[m] for o in scored) / 3)
    per_cat = result.metadata["retrieval_per_category"]
    assert set(per_cat) == {"single-hop", "temporal"}
    single = [o for o in scored if o.category == "single-hop"]
    for m in RETRIEVAL_METRICS:
        assert per_cat["single-hop"][m] == pytest.approx(sum(o.evidence[m] for o in single) / 2)
        assert per_cat["temporal"][m] == next(o.evidence[m] for o in scored if o.category == "temporal")
    skipped = next(o for o in result.outcomes if o.evidence.get("retrieval_skipped"))
    assert skipped.evidence["metric_fallback"] == "answer_span"  # counted, never silent
    assert result.metadata["metric"] == "ndcg@5"


@pytest.mark.parametrize("metric", ["hit@5", "session_ndcg@5"])
def test_cli_parses_and_prints(capsys, tmp_path, metric):
    from memarch.cli import main

    arch = tmp_path / "a.json"
    Architecture(("turn",), "vector", "hybrid", "lightweight").save(arch)
    code = main(["evaluate", "--benchmark", "generated", "--architecture", str(arch), "--embedder", "hash",
                 "--limit", "6", "--metric", metric])
    out = capsys.readouterr().out
    assert code in (0, None), out
    assert f"score ({metric})" in out and "ndcg@5" in out
    assert "retrieval (turn level" in out and "retrieval (session level" in out and "session_mrr" in out

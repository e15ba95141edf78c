"""benchmarks/bench_lme_rankings.py scores a whole-haystack ranking exactly as the official metrics
module scores a run: its session and user-turn scores equal `question_scores` for the same ranking
on real _S instances, and the script runs end to end on a few of them."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from memarch.benchmarks.longmemeval import LongMemEval
from memarch.benchmarks.metrics.longmemeval_official import Corpus, question_scores
from memarch.benchmarks.metrics.retrieval import ranked_sessions

pytestmark = pytest.mark.integration
SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_lme_rankings.py"


@pytest.fixture(scope="module")
def bench_script():
    spec = importlib.util.spec_from_file_location("bench_lme_rankings", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def s_bench(data_dir) -> LongMemEval:
    return LongMemEval(data_dir / "longmemeval", variant="s", instances=4)


def test_its_scores_are_the_official_ones(bench_script, s_bench):
    rng = np.random.default_rng(0)
    for dialogue in s_bench.dialogues:
        q, corpus = dialogue.questions[0], Corpus.of(dialogue)
        turns = [t.id for s in dialogue.sessions for t in s.turns]
        ranked = [turns[i] for i in rng.permutation(len(turns))]  # a run ranking every turn
        official = question_scores(q, corpus, ranked)
        sessions = [corpus.session_id[s.id] for s in dialogue.sessions]
        session_order = [corpus.session_id[s] for s in ranked_sessions(ranked, corpus.episode_of)]
        vendor = [corpus.session_id[s] for s in q.metadata["answer_sessions"] if s in corpus.session_id]
        gold = [corpus.session_id[s] for s in q.metadata["official_session_gold"]]
        mine = bench_script.session_scores(session_order, vendor, gold, sessions)
        assert mine["vendor R_any@5"] == official["vendor_session/recall_any@5"]
        assert mine["vendor NDCG@10"] == pytest.approx(official["vendor_session/ndcg_any@10"])
        assert mine["strict R_all@5"] == official["session/recall_all@5"]
        assert mine["strict NDCG@10"] == pytest.approx(official["session/ndcg_any@10"])
        user = [corpus.turn_id[t] for t in ranked if corpus.turn_id[t] in set(corpus.user_turns)]
        turn_gold = [corpus.turn_id[t] for t in q.metadata["official_turn_gold"]]
        got = bench_script.turn_scores(user, turn_gold, list(corpus.user_turns))
        assert got["R_any@10"] == official["user_turn/recall_any@10"]
        assert got["R_all@10"] == official["user_turn/recall_all@10"]
        assert got["NDCG@10"] == pytest.approx(official["user_turn/ndcg_any@10"])
        assert got["turn2session R_any@5"] == official["user_turn2session/recall_any@5"]


def test_the_script_runs_on_a_few_instances(bench_script, data_dir, tmp_path, capsys, monkeypatch):
    import json

    monkeypatch.setenv("MEMARCH_CACHE_DIR", str(tmp_path))
    out = tmp_path / "rows.json"
    assert bench_script.main(["--data", str(data_dir / "longmemeval"), "--embedder", "hash", "--instances", "4",
                              "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "LongMemEval_S, 4 questions" in text and "| session retriever (defaults) |" in text
    saved = json.loads(out.read_text())
    assert len(saved["rows"]) == 4 and 0.0 <= saved["alpha_session"] <= 1.0
    for row in saved["rows"]:
        assert all(0.0 <= v <= 1.0 for scores in row["session"].values() for v in scores.values())

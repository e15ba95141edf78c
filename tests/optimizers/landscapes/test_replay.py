"""Replay: strategies against a landscape over seeds — equal round 0, budgets of distinct
architectures, the pick chosen on validation, a run's first `budget` trials independent of how far
it continues, the statistics and the CLI."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from memarch.cli import main
from memarch.pipeline.presets import warm_start_architectures
from memarch.optimizers.landscapes.replay import Replay, parse_strategy
from memarch.optimizers.search.bootstrap import bootstrap_ci, ratio_ci
from memarch.benchmarks.evaluation.evaluate import evaluate

@pytest.fixture(scope="module")
def bench(small_generated):
    return small_generated


@pytest.fixture(scope="module")
def land(small_landscape):
    return small_landscape


def test_runs_share_round_0_pick_on_validation_and_count_distinct(land):
    replay = Replay(land, budget=8, horizon=20)
    report = replay.run_all(["guided", "random", "tpe"], range(2))
    for seed in range(2):
        warm = [a.key() for a in warm_start_architectures(replay.space, seed, 3)]
        for run in (r for r in report.runs if r.seed == seed):
            assert run.keys[:3] == warm, run.strategy
            assert len(run.keys) == len(set(run.keys)) and len(run.keys) <= 20
            assert all(k in land for k in run.keys[:8])
            # the pick is the best on validation among architectures the run evaluated within budget
            assert run.pick in run.keys[:8]
            assert run.pick_validation == pytest.approx(replay.table.validation[land.index(run.pick)])
            assert run.pick_test == pytest.approx(replay.table.test[land.index(run.pick)])
            hit = run.trials_to_top
            assert hit is None or (run.keys[hit - 1] in replay.table.top
                                   and not set(run.keys[:hit - 1]) & replay.table.top)


def test_the_first_budget_trials_do_not_depend_on_the_horizon(land):
    short = Replay(land, budget=8, horizon=8).run("guided", 1)
    long = Replay(land, budget=8, horizon=25).run("guided", 1)
    assert long.keys[:8] == short.keys and long.pick == short.pick


def test_a_replayed_trial_is_the_live_evaluation(land, bench, hash_res):
    replay = Replay(land, budget=6, horizon=6)
    run = replay.run("random", 0)
    arch = land.architecture(land.index(run.pick))
    live = evaluate(arch, bench, split="test", resources=hash_res)
    assert run.pick_test == pytest.approx(live.score, abs=1e-6)


def test_report_table_names_the_gap_first_and_the_ratios(land, tmp_path):
    report = Replay(land, budget=6, horizon=12).run_all(["guided", "random", "guided@none"], range(3))
    text = report.table()
    lines = text.splitlines()
    assert lines[2].startswith("oracle (best test score)") and "gap" in lines[2] and "noise" in lines[2]
    assert "trials to top, guided / random" in text and "guided@none" in text
    rows = {r["strategy"]: r for r in report.rows()}
    assert rows["guided"]["seeds"] == 3 and 0 <= rows["guided"]["top_within_budget"] <= 1
    cold = [r for r in report.runs if r.strategy == "guided@none"]
    warm = [a.key() for a in warm_start_architectures(report.replay.space, 0, 3)]
    assert cold[0].keys[:3] != warm
    png = report.plot(tmp_path / "r.png")
    assert png.stat().st_size > 5000
    data = report.to_dict()
    assert data["gap"]["oracle"] == land.keys[report.table_.oracle] and len(data["runs"]) == 9


def test_bootstrap_intervals():
    m, lo, hi = bootstrap_ci([1, 2, 3, 4, 100])
    assert m == 3 and lo <= m <= hi
    assert all(math.isnan(v) for v in bootstrap_ci([]))
    r, lo, hi = ratio_ci([10] * 20, [20] * 20)
    assert r == lo == hi == 0.5
    x = np.random.default_rng(0).normal(size=200)
    mean, lo, hi = bootstrap_ci(x, np.mean)
    assert lo < mean < hi and hi - lo < 0.4


def test_cli_replay_writes_table_runs_and_curves(land, tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(["landscape", "replay", land.path, "--seeds", "2", "--budget", "5", "--horizon", "8",
                 "--strategies", "guided,random", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "captured gain" in text and "oracle" in text
    assert json.loads(out.with_suffix(".json").read_text())["budget"] == 5
    assert out.with_suffix(".png").exists() and out.with_suffix(".txt").exists()


@pytest.mark.parametrize("argv, needle", [
    (["--strategies", "nope"], "unknown strategy"),
    (["--strategies", "guided@warm"], "unknown warm start"),
    (["--budget", "10", "--horizon", "5"], "--horizon"),
    (["--seeds", "0"], "--seeds"),
    (["--metric", "qa_f1"], "not stored"),
])
def test_cli_replay_bad_input_is_one_line_exit_2(land, argv, needle, capsys):
    assert main(["landscape", "replay", land.path, *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_parse_strategy():
    assert parse_strategy("guided@none") == ("guided", "none", None)
    assert parse_strategy("tpe") == ("tpe", None, None)
    assert parse_strategy("tpe+wilcoxon") == ("tpe", None, "wilcoxon")
    assert parse_strategy("guided@none+median") == ("guided", "none", "median")

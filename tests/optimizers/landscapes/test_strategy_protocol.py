"""Issue 50's protocol: regret per budget, trials to a top architecture, paired comparisons against a
reference — hand-checked on a synthetic table with a known optimum — and, on a real (small) landscape,
per-budget picks chosen on validation from each run's own prefix, equal warm starts and budgets
across strategies, replays reproducible from their seed, and the CLI's table, JSON and PNG."""
from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.stats import wilcoxon

from memarch.cli import main
from memarch.optimizers.landscapes.protocol import (ProtocolReport, paired, paired_ratio_ci, paired_test_lines,
                                                    wilcoxon_p)
from memarch.optimizers.landscapes.replay import Replay
from memarch.optimizers.landscapes.report import ReplayRun
from memarch.pipeline.presets import warm_start_architectures

# A table of 5 architectures a..e with a known optimum: e has the best test score (0.9).
KEYS = ["a", "b", "c", "d", "e"]
TEST = np.array([0.5, 0.6, 0.7, 0.8, 0.9])
VALID = np.array([0.4, 0.65, 0.6, 0.85, 0.8])


def _table():
    return SimpleNamespace(test=TEST, validation=VALID, rows=list(range(5)), oracle=4, n_top=1,
                           landscape=SimpleNamespace(keys=KEYS, benchmark="synthetic"))


def _run(strategy, seed, picks, trials_to_top):
    rows = {b: {"pick": k, "validation": float(VALID[KEYS.index(k)]), "test": float(TEST[KEYS.index(k)])}
            for b, k in picks.items()}
    return ReplayRun(strategy=strategy, seed=seed, keys=[], pick=picks[max(picks)], pick_validation=0.0,
                     pick_test=0.0, trials_to_top=trials_to_top, curve=[], picks=rows)


def _report(runs, horizon=40):
    strategies = list(dict.fromkeys(r.strategy for r in runs))
    return SimpleNamespace(runs=runs, table_=_table(), strategies=strategies,
                           replay=SimpleNamespace(horizon=horizon, warm_start="presets"),
                           by_strategy=lambda s: [r for r in runs if r.strategy == s])


RUNS = [
    _run("guided", 0, {5: "b", 10: "e"}, 7), _run("guided", 1, {5: "c", 10: "d"}, None),
    _run("guided", 2, {5: "e", 10: "e"}, 3),
    _run("tpe", 0, {5: "a", 10: "d"}, 12), _run("tpe", 1, {5: "c", 10: "c"}, 20),
    _run("tpe", 2, {5: "b", 10: "e"}, 9),
]


def test_regret_and_trials_to_top_are_the_hand_computed_values():
    p = ProtocolReport(_report(RUNS))
    assert p.budgets == (5, 10) and p.reference == "tpe" and p.oracle_test == 0.9
    assert p.regret("guided", 5) == pytest.approx({0: 0.3, 1: 0.2, 2: 0.0})
    assert p.regret("tpe", 10) == pytest.approx({0: 0.1, 1: 0.2, 2: 0.0})
    # validation regret: the best validation score (0.85, d) minus the pick's
    assert p.validation_regret("guided", 10) == pytest.approx({0: 0.05, 1: 0.0, 2: 0.05})
    # a run that never met a top architecture counts horizon + 1
    assert p.trials_to_top("guided") == {0: 7.0, 1: 41.0, 2: 3.0}
    rows = {(r["budget"], r["strategy"]): r for r in p.rows()}
    assert rows[(5, "guided")]["regret_mean"][0] == pytest.approx(0.5 / 3)
    assert rows[(10, "tpe")]["regret_median"][0] == pytest.approx(0.1)
    assert rows[(10, "guided")]["top_within"] == pytest.approx(2 / 3)  # 7 and 3 are <= 10, 41 is not
    assert rows[(5, "guided")]["top_within"] == pytest.approx(1 / 3)


def test_paired_differences_wins_and_the_wilcoxon_test():
    p = ProtocolReport(_report(RUNS))
    by = {c.measure: c for c in p.comparisons()}
    reg5 = by["regret@5"]  # guided - tpe per seed: 0.3-0.4, 0.2-0.2, 0.0-0.3
    assert reg5.mean == pytest.approx((-0.1 + 0.0 - 0.3) / 3)
    assert (reg5.wins, reg5.ties, reg5.losses) == (2, 1, 0)
    assert reg5.p_value == pytest.approx(wilcoxon([-0.1, -0.3]).pvalue)
    trials = by["trials_to_top"]  # 7-12, 41-20, 3-9
    assert trials.mean == pytest.approx((-5 + 21 - 6) / 3) and (trials.wins, trials.losses) == (2, 1)
    assert p.trials_ratio("guided")[0] == pytest.approx(7 / 12)
    assert wilcoxon_p([0, 0, 0]) == 1.0


def test_paired_ratio_resamples_seeds_jointly_and_refuses_unequal_series():
    m, lo, hi = paired_ratio_ci([2, 2, 2, 2], [4, 4, 4, 4])
    assert (m, lo, hi) == (0.5, 0.5, 0.5)  # a constant ratio has no spread when seeds move together
    with pytest.raises(ValueError):
        paired_ratio_ci([1, 2], [1])


def test_the_default_is_chosen_on_validation_and_the_goal_is_checked():
    runs = RUNS + [_run("hybrid", s, {5: "d", 10: "d"}, 4) for s in range(3)]
    p = ProtocolReport(_report(runs))
    choice = p.default_strategy()
    # hybrid's picks (d) have validation regret 0; guided's 0.05, 0, 0.05: hybrid is the default
    assert choice["strategy"] == "hybrid"
    g = p.goal("hybrid")
    # 4 trials on every seed against tpe's 12, 20, 9: every resampled ratio lies in [4/20, 4/9]
    assert g["trials_ratio"] == pytest.approx((4 / 12, 4 / 20, 4 / 9)) and g["trials_met"] is True
    # regret at 10: hybrid 0.1 on every seed, tpe 0.1, 0.2, 0.0: no worse shown, so met
    assert g["regret_met"] is True and g["met"] is True
    assert p.goal("guided")["trials_met"] is False  # 7 / 12 > 1/2
    assert "goal for hybrid against tpe" in p.table()


def test_higher_is_better_flips_wins_and_the_test_score_lines():
    c = paired("x", "y", "test", {0: 0.5, 1: 0.6}, {0: 0.4, 1: 0.6}, higher_is_better=True)
    assert (c.wins, c.ties, c.losses) == (1, 1, 0)
    lines = paired_test_lines({"tpe": {0: 0.4, 1: 0.5}, "guided": {0: 0.5, 1: 0.5}})
    assert "paired against tpe" in lines[0] and lines[1].strip().startswith("guided") and "+0.0500" in lines[1]
    assert paired_test_lines({"tpe": {0: 0.4}}) == []


@pytest.fixture(scope="module")
def replayed(small_landscape):
    replay = Replay(small_landscape, budget=10, budgets=(5, 10, 20), horizon=24)
    return replay, replay.run_all(["guided", "hybrid", "tpe"], range(3))


def test_each_budgets_pick_is_chosen_on_validation_from_the_runs_own_prefix(replayed):
    replay, report = replayed
    assert replay.budgets == (5, 10, 20) and replay.horizon == 24
    for run in report.runs:
        assert sorted(run.picks) == [5, 10, 20] and run.picks[10]["pick"] == run.pick
        for b, row in run.picks.items():
            assert row["pick"] in run.keys[:b]
            assert row["test"] == pytest.approx(replay.table.test[replay.landscape.index(row["pick"])])
            assert row["validation"] == pytest.approx(replay.table.validation[replay.landscape.index(row["pick"])])


def test_a_budgets_pick_is_the_runoff_of_that_prefix(small_landscape):
    # the pick at 5 equals choose_on_validation over the run's first 5 records (the runoff at budget 5)
    replay = Replay(small_landscape, budget=5, budgets=(5,), horizon=5)
    run = Replay(small_landscape, budget=10, budgets=(5,), horizon=10).run("tpe", 0)
    alone = replay.run("tpe", 0)
    assert alone.keys == run.keys[:5] and alone.pick == run.picks[5]["pick"]


def test_every_strategy_of_a_seed_starts_from_the_same_warm_start_with_the_same_budgets(replayed):
    replay, report = replayed
    for seed in range(3):
        warm = [a.key() for a in warm_start_architectures(replay.space, seed, 3)]
        runs = [r for r in report.runs if r.seed == seed]
        assert {r.strategy for r in runs} == {"guided", "hybrid", "tpe"}
        for r in runs:
            assert r.keys[:3] == warm and len(r.keys) == len(set(r.keys)) == 24


def test_a_replay_is_reproducible_from_its_seed(small_landscape, replayed):
    _, report = replayed
    again = Replay(small_landscape, budget=10, budgets=(5, 10, 20), horizon=24)
    for strategy in ("hybrid", "tpe"):
        first = next(r for r in report.runs if r.strategy == strategy and r.seed == 1)
        second = again.run(strategy, 1)
        assert second.keys == first.keys and second.picks == first.picks and second.counts == first.counts


def test_protocol_table_over_a_real_replay(replayed):
    _, report = replayed
    p = ProtocolReport(report)
    text = p.table()
    assert "protocol (issue 50): budgets 5, 10, 20" in text and "paired against tpe" in text
    assert "trials to top, guided / tpe" in text and "default chosen on validation" in text
    for b in (5, 10, 20):
        assert all(v >= -1e-12 for v in p.regret("guided", b).values())  # nothing beats the oracle


def test_cli_prints_the_protocol_and_writes_its_png(small_landscape, tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["landscape", "replay", small_landscape.path, "--strategies", "hybrid,tpe", "--seeds", "2",
                 "--budget", "10", "--horizon", "20", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "protocol (issue 50): budgets 5, 10, 20" in text and "hybrid" in text  # 40 is past the horizon
    assert (tmp_path / "r-regret.png").stat().st_size > 0
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["protocol"]["budgets"] == [5, 10, 20] and data["runs"][0]["picks"]["5"]["pick"]
    assert main(["landscape", "replay", small_landscape.path, "--budgets", "5,50", "--horizon", "20",
                 "--seeds", "1"]) == 2
    assert "past --horizon" in capsys.readouterr().err
    assert main(["landscape", "replay", small_landscape.path, "--budgets", "5,x", "--seeds", "1"]) == 2


def test_the_benchmark_script_prints_the_noise_and_the_protocol(small_landscape, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_strategies.py"
    done = subprocess.run([sys.executable, str(script), small_landscape.path, "--strategies", "hybrid,tpe",
                           "--seeds", "2", "--budget", "5", "--horizon", "10", "--warm-starts", "presets,none",
                           "--resplits", "20", "--workers", "1", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "split noise over 20 re-splits" in done.stdout and done.stdout.count("protocol (issue 50)") == 2
    noise = json.loads((tmp_path / "small-noise.json").read_text())
    lo, mid, hi = noise["best_preset_test"]
    assert lo <= mid <= hi and noise["resplits"] == 20
    assert (tmp_path / "small-none-regret.png").exists()

"""`compare --landscape`: live runs scored against a landscape of the same benchmark — trials to a
top architecture, captured gain against the oracle and the best preset, the agreement between the
live scores and the landscape's — and the one-line refusals of a landscape that cannot score them."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from memarch.cli import main
from memarch.errors import MemarchError
from memarch.optimizers.landscapes.compare_oracle import OracleView, check_landscape
from memarch.optimizers.landscapes.replay import LandscapeTable

SMALL = ["--benchmark", "generated", "--knob", "conversations=2", "--knob", "sessions=3", "--embedder", "hash"]


def _report(keys, pick, points=None):
    return SimpleNamespace(evaluated=list(keys), points=points or [[] for _ in keys],
                           architecture=SimpleNamespace(key=lambda: pick))


def test_trials_to_top_and_captured_gain_follow_the_table(small_landscape):
    land = small_landscape
    t = LandscapeTable(land, land.default_metric)
    top = sorted(t.top)[0]
    plain = [k for k in land.keys if k != "none" and k not in t.top][:4]
    oracle, preset = land.keys[t.oracle], land.keys[t.presets[t.best_preset]]
    runs = {"a": [_report([*plain[:2], top, plain[2]], oracle), _report(plain, preset)]}
    view = OracleView(land, runs, budget=4, metric=land.default_metric)
    row = view.rows()[0]
    # Seed 0 meets a top architecture at its 3rd trial, seed 1 never (counted budget + 1 = 5).
    assert sorted(view._first_top(r) for r in runs["a"]) == [3, 5]
    assert row["top_within_budget"] == 0.5 and row["picks_missing"] == 0
    gains = sorted(((float(t.test[land.index(r.architecture.key())]) - float(t.test[land.index(preset)]))
                    / (float(t.test[t.oracle]) - float(t.test[land.index(preset)]))) for r in runs["a"])
    assert gains == pytest.approx([0.0, 1.0])  # the best preset captures nothing, the oracle all
    assert row["captured_gain"][0] == pytest.approx(0.5)


def test_agreement_counts_equal_different_and_missing_scores(small_landscape):
    land = small_landscape
    t = LandscapeTable(land, land.default_metric)
    a, b = [k for k in land.keys if k != "none"][:2]
    search_a, search_b = float(t.search[land.index(a)]), float(t.search[land.index(b)])
    runs = {"x": [_report([a, b, "turn|json|hybrid|nope"], a, [[search_a], [search_b + 0.01], [0.5]])]}
    agree = OracleView(land, runs, budget=3, metric=land.default_metric).agreement()
    assert agree["architectures"] == 3 and agree["missing"] == 1 and agree["looked_up"] == 2
    assert agree["equal"] == 1 and agree["max_abs_diff"] == pytest.approx(0.01)


def test_a_landscape_of_another_benchmark_or_objective_is_refused(small_landscape):
    with pytest.raises(MemarchError, match="built on 'generated'"):
        check_landscape(small_landscape, "locomo", "conversation", "answer_span")
    with pytest.raises(MemarchError, match="not stored"):
        check_landscape(small_landscape, "generated", small_landscape.family, "qa_f1")


def test_cli_compare_scores_live_runs_against_the_landscape(small_landscape, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "cmp"
    code = main(["compare", *SMALL, "--budget", "5", "--seeds", "2", "--strategies", "guided,random",
                 "--no-tracking", "--landscape", small_landscape.path, "--out", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "against the landscape" in text and "trials to top, guided / random" in text
    # issue 50's protocol over the live runs: the paired test of the picks, regret at the budget, its PNG
    assert "pick's test score paired against guided by seed" in text and "random" in text
    assert "protocol (issue 50): budgets 5 " in text and "regret@5" in text
    assert (out / "compare-generated-regret.png").stat().st_size > 0
    data = json.loads((out / "compare-generated.json").read_text())["landscape"]
    agree = data["agreement"]
    # The landscape was built from the same benchmark, splits and embedder: every live search score
    # of an architecture it holds is the landscape's, to the last digit.
    assert agree["looked_up"] > 0 and agree["equal"] == agree["looked_up"]
    assert agree["looked_up"] + agree["missing"] == agree["architectures"]
    rows = {r["strategy"]: r for r in data["rows"]}
    assert set(rows) == {"guided", "random"} and all(r["seeds"] == 2 for r in rows.values())
    assert all(1 <= r["trials_to_top"][0] <= 6 for r in rows.values())


def test_cli_compare_refuses_a_foreign_landscape_before_running(small_landscape, data_dir, tmp_path, monkeypatch,
                                                                capsys):
    monkeypatch.chdir(tmp_path)
    code = main(["compare", "--benchmark", "locomo", "--data", str(data_dir / "locomo"), "--budget", "3", "--seeds", "1",
                 "--no-tracking", "--landscape", small_landscape.path, "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "built on 'generated'" in err
    assert not (tmp_path / "o").exists()


def test_an_unwritable_out_is_refused_before_any_run(small_landscape, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code = main(["compare", *SMALL, "--budget", "3", "--seeds", "1", "--no-tracking", "--out", str(blocker / "sub")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--out" in err
    assert main(["landscape", "replay", small_landscape.path, "--seeds", "1", "--out", str(blocker / "r")]) == 2
    assert "--out" in capsys.readouterr().err


def test_the_protocol_over_live_runs_picks_each_budget_as_a_replay_would(small_landscape):
    land = small_landscape
    t = LandscapeTable(land, "answer_span")
    rows = [k for k in land.keys if k != "none"]
    runs = {}
    for strategy, offset in (("tpe", 0), ("guided", 7)):
        runs[strategy] = []
        for seed in range(3):
            keys = rows[offset + seed: offset + seed + 10]
            report = SimpleNamespace(evaluated=keys, points=[[] for _ in keys], seed=seed, curve=[0.0] * 10,
                                     validation_score=0.0, architecture=SimpleNamespace(key=lambda k=keys[-1]: k))
            runs[strategy].append(report)
    view = OracleView(land, runs, budget=10, metric="answer_span")
    protocol = view.protocol()
    assert protocol.budgets == (5, 10) and protocol.reference == "tpe"
    for run in protocol.report.runs:
        first5 = sorted(run.keys[:5], key=lambda k: (-t.search[land.index(k)], t.cost[land.index(k)]))[:3]
        assert run.picks[5]["pick"] == max(first5, key=lambda k: t.validation[land.index(k)])
        assert run.picks[10]["pick"] == run.keys[9]  # the run's own pick at its budget
        assert run.picks[10]["test"] == pytest.approx(float(t.test[land.index(run.keys[9])]))
    assert "protocol (issue 50): budgets 5, 10" in protocol.table()

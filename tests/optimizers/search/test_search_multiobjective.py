"""Multi-objective studies (quality and costs): every strategy runs to its budget with one value per
objective, guided edits the Pareto front, compile selects on the validation front, compare reports
fronts and hypervolumes, a killed multi-objective study resumes, and bad options are one line."""
from __future__ import annotations

import optuna
import pytest
from optuna.trial import TrialState

from search_helpers import SyntheticMetric, synthetic_costs

from memarch.cli import main
from memarch.errors import MemarchError
from memarch.optimizers.comparison import compare
from memarch.optimizers.compile import MemarchOptimizer
from memarch.optimizers.search.runner import Search
from memarch.optimizers.search.param_space import ParamSpace
from memarch.optimizers.samplers.strategies import make_sampler
from memarch.optimizers.search.study import make_storage, open_study

optuna.logging.set_verbosity(optuna.logging.WARNING)
TWO = ("quality", "memory_words")


@pytest.mark.parametrize("strategy", ["random", "tpe", "nsga2", "guided"])
def test_each_strategy_runs_a_multi_objective_study_to_its_budget(space, strategy):
    ss = ParamSpace(space)
    study = open_study("mo", make_storage(None), make_sampler(strategy, ss, seed=0), space=ss.describe(),
                       objectives=TWO)
    history = Search(SyntheticMetric(n_queries=30), ss, budget=10, objectives=TWO).run(study)
    assert len(history) == 10 and len(study.directions) == 2
    done = [t for t in study.trials if t.state == TrialState.COMPLETE]
    records = {r.number: r for r in history.records}
    for t in done:
        if "repeat_of" in t.user_attrs:  # a repeat returns its first trial's values
            assert t.values == study.trials[t.user_attrs["repeat_of"]].values
        else:
            rec = records[t.number]
            assert t.values == [rec.score, synthetic_costs(rec.architecture)["memory_words"]]
    if strategy == "guided":
        rounds = study.sampler.rounds
        assert rounds and all(r["objectives"] == list(TWO) for r in rounds)
        fronts = [{p["architecture"] for p in r["pareto_front"]} for r in rounds]
        # each round edits a member of the two-objective front, in turn
        assert all(r["leader"] in f for r, f in zip(rounds, fronts))


def test_nsga2_runs_single_objective_too(space):
    ss = ParamSpace(space)
    study = open_study("so", make_storage(None), make_sampler("nsga2", ss, seed=1), space=ss.describe())
    assert len(Search(SyntheticMetric(n_queries=20), ss, budget=6).run(study)) == 6


def test_resume_checks_the_objectives(space, tmp_path):
    ss = ParamSpace(space)
    storage = make_storage(f"sqlite:///{tmp_path}/o.db")
    open_study("x", storage, make_sampler("random", ss), space=ss.describe(), objectives=TWO)
    with pytest.raises(MemarchError, match="created for --objectives quality,memory_words"):
        open_study("x", storage, make_sampler("random", ss), space=ss.describe(), resume=True)
    assert open_study("x", storage, make_sampler("random", ss), space=ss.describe(), resume=True, objectives=TWO)


@pytest.mark.parametrize("select", ["quality", "knee", "memory_words<=600"])
def test_compile_selects_on_the_validation_front(space, select):
    opt = MemarchOptimizer(SyntheticMetric(n_queries=40), strategy="guided", budget=10, seed=0,
                           objectives=TWO, select=select)
    opt.compile(space)
    rep = opt.report
    val = rep.validation["validation_values"]
    front = rep.validation["validation_front"]
    pick = rep.architecture.key()
    assert pick in front and set(front) <= set(val) and len(rep.front) >= 1
    if select == "quality":
        assert val[pick]["quality"] == max(val[k]["quality"] for k in front)
    elif select == "memory_words<=600":
        assert val[pick]["memory_words"] <= 600
        assert val[pick]["quality"] == max(v["quality"] for v in val.values() if v["memory_words"] <= 600)
    assert rep.points and all(len(p) == 2 for p in rep.points)


def test_compile_limit_nobody_meets_is_one_clear_error(space):
    opt = MemarchOptimizer(SyntheticMetric(n_queries=20), strategy="random", budget=4, seed=0,
                           objectives=TWO, select="memory_words<=1")
    with pytest.raises(MemarchError, match="no candidate on validation is within it"):
        opt.compile(space)


def test_compare_reports_fronts_and_hypervolumes(space, tmp_path):
    cmp = compare(SyntheticMetric(n_queries=30), space, ["guided", "nsga2"], seeds=2, budget=6,
                  objectives=TWO, baselines=False)
    fronts = cmp.fronts()
    assert set(fronts.per_seed) == {"guided", "nsga2"} and all(len(v) == 2 for v in fronts.per_seed.values())
    assert all(0.0 < hv < 1.0 for v in fronts.per_seed.values() for hv in v)
    text = cmp.table()
    assert "hypervolume" in text and "highest median hypervolume" in text and "/2 seeds]" in text
    assert cmp.plot_fronts(tmp_path / "f.png").stat().st_size > 1000


TINY = ["--benchmark", "generated", "--knob", "conversations=1", "--knob", "sessions=3", "--limit", "8",
        "--embedder", "hash", "--no-tracking", "--storage", "memory"]


def test_cli_single_objective_states_the_tie_break(tmp_path, capsys):
    assert main(["compile", *TINY, "--budget", "2", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "ties broken by lower memory_words, then read_p95" in out


def test_cli_two_objectives_prints_the_front(tmp_path, capsys):
    assert main(["compile", *TINY, "--budget", "3", "--out", str(tmp_path), "--objectives", "quality,memory_words",
                 "--select", "knee"]) == 0
    out = capsys.readouterr().out
    assert "search Pareto front" in out and "pick on validation (knee of the validation Pareto front)" in out


@pytest.mark.parametrize("bad", [["--objectives", "memory_words,quality"], ["--objectives", "quality,speed"],
                                 ["--select", "knee"], ["--select", "memory_words<"],
                                 ["--objectives", "quality,read_p95", "--select", "tokens<=3"]])
@pytest.mark.parametrize("command", ["compile", "compare"])
def test_cli_bad_objectives_or_select_is_one_line_exit_2(command, bad, capsys):
    assert main([command, *TINY, "--budget", "2", *bad]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("memarch: error:") and "\n" not in err

"""Optuna's samplers as named baselines: each runs a small study on a landscape replay, in the
two-objective space and in the full (conditional) space; a seed reproduces its run; the GP's repeated
proposals go to its random fallback, counted; the samplers that do not fit are refused in one line."""
from __future__ import annotations

import optuna
import pytest
from optuna.trial import TrialState

from search_helpers import SyntheticMetric

from memarch.cli import main
from memarch.errors import MemarchError
from memarch.optimizers.samplers.gp import GPBaseline
from memarch.optimizers.landscapes.replay import Replay, parse_strategy
from memarch.optimizers.search.runner import Search
from memarch.optimizers.search.param_space import ParamSpace
from memarch.optimizers.samplers.strategies import STRATEGIES, UNSUPPORTED, make_sampler
from memarch.optimizers.search.study import make_storage, open_study
from memarch.pipeline.space import ArchitectureSpace

optuna.logging.set_verbosity(optuna.logging.WARNING)
BASELINES = ["tpe-multivariate", "tpe-independent", "nsga2", "nsga3", "gp", "qmc"]
TWO = ("quality", "memory_words")


@pytest.fixture(scope="module")
def land(small_landscape):
    return small_landscape


def test_every_baseline_is_a_registered_strategy():
    assert set(BASELINES) <= set(STRATEGIES) and not set(UNSUPPORTED) & set(STRATEGIES)


@pytest.mark.parametrize("argv", [["compile"], ["compare"], ["landscape", "replay"]])
def test_the_strategies_help_names_every_registered_strategy(argv, capsys):
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    listed = text.rsplit("--strategies STRATEGIES", 1)[1].split(" --", 1)[0].replace(" ", "")
    assert "comma-separated" in listed and all(name in listed for name in STRATEGIES), listed


@pytest.mark.parametrize("strategy", BASELINES)
def test_each_baseline_replays_and_its_seed_reproduces(land, strategy):
    replay = Replay(land, budget=8, horizon=8)
    first, again = replay.run(strategy, 0), replay.run(strategy, 0)
    assert len(first.keys) == 8 == len(set(first.keys)) and first.stopped is None
    assert all(k in land for k in first.keys) and first.pick in first.keys
    assert again.keys == first.keys and again.pick == first.pick


def test_qmc_seeds_draw_different_sequences(land):
    # Unscrambled Sobol would ignore the seed; the strategy scrambles so seeds differ.
    replay = Replay(land, budget=8, horizon=8, warm_start="none")
    assert replay.run("qmc", 0).keys != replay.run("qmc", 1).keys


@pytest.mark.parametrize("strategy", BASELINES)
def test_each_baseline_runs_a_two_objective_study(space, strategy):
    ss = ParamSpace(space)
    study = open_study("mo", make_storage(None), make_sampler(strategy, ss, seed=0), space=ss.describe(),
                       objectives=TWO)
    history = Search(SyntheticMetric(n_queries=20), ss, budget=11, objectives=TWO).run(study)
    assert len(history) == 11 and len(study.directions) == 2  # the GP proposes after 10
    assert all(len(t.values) == 2 for t in study.trials if t.state == TrialState.COMPLETE)


@pytest.mark.parametrize("strategy", BASELINES)
def test_each_baseline_draws_the_conditional_knobs_of_the_full_space(strategy):
    full = ParamSpace(ArchitectureSpace("conversation", lm_available=False), "full")
    study = optuna.create_study(direction="maximize", sampler=make_sampler(strategy, full, seed=0))

    def objective(trial):
        arch = full.suggest(trial)
        if not full.is_valid(arch):
            raise optuna.TrialPruned("invalid")
        return -abs(arch.param_dict.get("retrieve.top_k", 20) - 8) + (arch.store == "vector")

    study.optimize(objective, n_trials=14)
    done = [t for t in study.trials if t.state == TrialState.COMPLETE]
    assert len(done) >= 3
    for t in study.trials:  # exactly the chosen modules' knobs, never another module's
        assert {n for n in t.params if "." in n} == {n for n, _, _ in full.chosen_knobs(t.params)}


def test_gp_sends_a_repeated_proposal_to_its_fallback_and_counts_it():
    sampler = GPBaseline(seed=0, n_startup_trials=2, warn_independent_sampling=False)
    study = optuna.create_study(direction="maximize", sampler=sampler)

    def objective(trial):
        if trial.suggest_categorical("x", ["a", "b", "c"]) == "c":
            raise optuna.TrialPruned("invalid")  # never reaches the GP, so it would propose it again
        return 1.0

    study.optimize(objective, n_trials=12)
    stats = sampler.stats()
    assert stats["gp_fallback"] >= 1
    assert stats["gp_proposals"] <= 3  # three values, each proposed once at most


@pytest.mark.parametrize("name,reason", [("cmaes", "CMA-ES"), ("grid", "GridSampler"), ("autosampler", "OptunaHub")])
def test_samplers_that_do_not_fit_are_refused_with_the_reason(space, name, reason):
    with pytest.raises(MemarchError, match=reason):
        make_sampler(name, ParamSpace(space))
    with pytest.raises(MemarchError, match=reason):
        parse_strategy(name)


def test_cli_refuses_cmaes_in_one_line(land, capsys, tmp_path):
    assert main(["landscape", "replay", str(land.path if hasattr(land, "path") else tmp_path / "x.npz"),
                 "--strategies", "random,cmaes", "--seeds", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cmaes" in err and "CMA-ES" in err
    assert main(["compare", "--benchmark", "generated", "--strategies", "cmaes", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "CMA-ES models only float/int parameters" in err


def test_compare_puts_the_baselines_in_its_table_and_curves(space, tmp_path):
    from memarch.optimizers.comparison.compare import compare

    cmp = compare(SyntheticMetric(n_queries=20), space, ["tpe-multivariate", "qmc"], seeds=2, budget=6)
    lines = cmp.table().splitlines()
    rows = [ln for ln in lines if ln.startswith(("tpe-multivariate ", "qmc ")) and ln.split()[1] == "2"]
    assert len(rows) == 2 and len(cmp.runs["qmc"]) == 2
    head = next(ln for ln in lines if ln.startswith("strategy"))
    assert all(len(r) <= len(head) + 30 for r in rows)  # the long name widens the column, not the row
    assert cmp.plot(tmp_path / "c.png").stat().st_size > 1000


def test_independent_tpe_models_each_parameter_alone():
    sampler = make_sampler("tpe-independent", ParamSpace(ArchitectureSpace("conversation", lm_available=False)), seed=0)
    assert isinstance(sampler, optuna.samplers.TPESampler) and sampler._multivariate is False
    assert make_sampler("tpe", ParamSpace(ArchitectureSpace("conversation", lm_available=False)), seed=0)._multivariate is not False

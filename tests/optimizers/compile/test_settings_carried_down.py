"""Issue 48, "settings carried down": one `SearchSettings` object from the optimizer (or compare) to
the runner and its trial function, stage two's `PromptSettings`, compare's `CompareSettings`, the
report from one run record — and one default for the budget, the finalists and top_k, whatever the
entry point."""
from __future__ import annotations

import inspect

import optuna
import pytest
from search_helpers import SyntheticMetric

from memarch.cli import build_parser
from memarch.errors import MemarchError
from memarch.optimizers.comparison import CompareSettings, compare
from memarch.optimizers.compile import (DEFAULT_BUDGET, DEFAULT_FINALISTS, CompileReport, CompileRun,
                                        MemarchOptimizer, PromptSettings, SearchSettings)
from memarch.optimizers.landscapes.replay import Replay
from memarch.optimizers.prompts.optimize import optimize_prompts
from memarch.optimizers.runoff import choose_on_validation
from memarch.optimizers.search.param_space import ParamSpace
from memarch.optimizers.search.runner import Search
from memarch.optimizers.search.study import make_storage, open_study
from memarch.optimizers.search.trial_function import TrialFunction

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _default(fn, name):
    return inspect.signature(fn).parameters[name].default


def test_one_budget_and_one_finalists_default_for_every_entry_point():
    assert (DEFAULT_BUDGET, DEFAULT_FINALISTS) == (20, 3)
    assert SearchSettings().budget == DEFAULT_BUDGET and SearchSettings().finalists == DEFAULT_FINALISTS
    for command in ("compile", "compare"):  # the CLI: 20 and 12 before
        args = build_parser([command]).parse_args([command])
        assert args.budget == DEFAULT_BUDGET, command
    replay = build_parser(["landscape"]).parse_args(["landscape", "replay", "x.npz"])
    assert replay.budget == DEFAULT_BUDGET
    assert _default(Replay.__init__, "budget") == DEFAULT_BUDGET
    assert _default(Replay.__init__, "finalists") == DEFAULT_FINALISTS
    assert _default(choose_on_validation, "finalists") == DEFAULT_FINALISTS


def test_the_cli_takes_the_finalists_too(capsys):
    from memarch.cli import main
    from memarch.cli.compile import search_settings

    args = build_parser(["compare"]).parse_args(["compare", "--budget", "12", "--finalists", "2"])
    assert (search_settings(args, "guided", 0, None).budget, search_settings(args, "guided", 0, None).finalists) \
        == (12, 2)  # compare's defaults before issue 48, still reachable
    assert build_parser(["compile"]).parse_args(["compile"]).finalists == DEFAULT_FINALISTS
    assert main(["compile", "--finalists", "0", "--no-tracking", "--storage", "memory"]) == 2
    assert "--finalists must be at least 1" in capsys.readouterr().err


def test_compare_runs_with_the_defaults_of_one_compile(space):
    """compare() and `memarch compare` re-score as many finalists as compile (2 before)."""
    cmp = compare(SyntheticMetric(n_queries=20), space, ["random"], seeds=1, budget=4, baselines=False)
    assert cmp.budget == 4
    assert len(cmp.runs["random"][0].finalists) == DEFAULT_FINALISTS


def test_one_top_k_default():
    from memarch.benchmarks.evaluation.settings import EvaluationSettings, default_top_k
    from memarch.modules.retrievers.base import Retriever
    from memarch.pipeline.program import MemoryProgram
    from memarch.pipeline.retrieval import DEFAULT_CONTEXT_BUDGET, DEFAULT_TOP_K

    assert _default(MemoryProgram.__init__, "top_k") == DEFAULT_TOP_K
    assert _default(Retriever.retrieve, "top_k") == _default(Retriever.forward, "top_k") == DEFAULT_TOP_K
    assert default_top_k(10) == DEFAULT_TOP_K  # the least an evaluation reads
    assert EvaluationSettings().read_top_k == DEFAULT_CONTEXT_BUDGET // 10 == 20


def test_the_runner_and_its_trial_function_read_the_settings_object(space):
    ss = ParamSpace(space)
    settings = SearchSettings(budget=3, max_failures=2, stuck_limit=50, objectives=("quality", "memory_words"))
    search = Search(SyntheticMetric(n_queries=10), ss, settings)
    assert search.settings is settings and search.trial_function.settings is settings
    assert (search.budget, search.objectives, search.trial_function.budget) == (3, settings.objectives, 3)
    assert [getattr(r, "limit", None) for r in search.rules][1:] == [2, 50]
    # settings by name still work, as MemarchOptimizer(evaluator, budget=...) does
    assert Search(SyntheticMetric(), ss, budget=4, pruner="sha").settings == SearchSettings(budget=4, pruner="sha")
    # a loop of one's own: no budget check unless told
    assert TrialFunction(SyntheticMetric(), ss).budget is None
    assert TrialFunction(SyntheticMetric(), ss, budget=5).budget == 5
    with pytest.raises(TypeError, match="unknown search setting 'budgett'"):
        Search(SyntheticMetric(), ss, budgett=4)


def test_compile_reports_from_its_run_record(space):
    opt = MemarchOptimizer(SyntheticMetric(n_queries=20), strategy="random", budget=3, warm_start="none",
                           prefetch=False)
    seen = {}
    original = CompileReport.from_run.__func__

    def spy(cls, run):
        seen["run"] = run
        return original(cls, run)

    CompileReport.from_run = classmethod(spy)
    try:
        opt.compile(space, testset="test")
    finally:
        CompileReport.from_run = classmethod(original)
    run = seen["run"]
    assert isinstance(run, CompileRun) and run.settings is opt.settings and run.study == opt.report.study
    assert run.pick == opt.report.architecture and len(run.history) == opt.report.trials == 3
    assert list(inspect.signature(CompileReport.from_run).parameters) == ["run"]


def test_stage_two_reads_prompt_settings():
    settings = SearchSettings(prompt_optimizer="gepa", prompt_examples=7, prompt_budget=30, seed=4)
    assert settings.prompts == PromptSettings("gepa", examples=7, budget=30, seed=4)
    assert SearchSettings(seed=None).prompts.seed == 0
    with pytest.raises(MemarchError, match="unknown prompt optimizer"):
        PromptSettings("adam")
    report = optimize_prompts(None, None, PromptSettings())  # "none": nothing is run
    assert report.optimizer == "none" and report.kept == "nothing to optimise"
    assert optimize_prompts(None, None, "none", examples=3).optimizer == "none"


def test_compare_settings_carry_its_layout(space, tmp_path):
    storage = f"sqlite:///{tmp_path / 'o.db'}"
    cmp = compare(SyntheticMetric(n_queries=20), space, ["random"], SearchSettings(budget=3, storage=storage),
                  CompareSettings(seeds=2, first_seed=5, baselines=False, study_prefix="p"))
    assert [r.seed for r in cmp.runs["random"]] == [5, 6] and not cmp.baselines
    assert {r.study for r in cmp.runs["random"]} == {"p-experience-random-s5", "p-experience-random-s6"}
    with pytest.raises(MemarchError, match="seeds must be at least 1"):
        CompareSettings(seeds=0)
    # by name, split between the two objects
    cmp = compare(SyntheticMetric(n_queries=20), space, ["random"], seeds=1, budget=2, baselines=False)
    assert cmp.budget == 2 and len(cmp.runs["random"]) == 1


def test_open_study_of_the_search_is_unchanged(space):
    """The runner still stops at the budget when handed the settings."""
    ss = ParamSpace(space)
    study = open_study("s", make_storage(None), optuna.samplers.RandomSampler(seed=0), space=ss.describe())
    assert len(Search(SyntheticMetric(n_queries=10), ss, SearchSettings(budget=4)).run(study)) == 4

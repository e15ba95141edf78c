"""Names of earlier code. The API names renamed before the first release are gone (no shim: an
AttributeError, ImportError or TypeError, not a warning); files that earlier code saved — programs,
evaluation records, `--json` results, studies, landscapes — load as they are, by today's names and
without a warning: nothing a user saved stops loading (CHANGELOG.md lists the renames)."""
from __future__ import annotations

import importlib
import json
import warnings

import numpy as np
import pytest

from memarch.pipeline.architecture import Architecture
from memarch.pipeline.trial import TrialResult

ARCH = Architecture(("turn",), "vector", "hybrid", "lightweight")


@pytest.fixture(autouse=True)
def _no_warning():
    """Reading a file of earlier code warns about nothing: the user did nothing deprecated."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        yield


# -- the old API names are gone --------------------------------------------------------------------
@pytest.mark.parametrize("module, name", [
    ("memarch", "SearchSpace"), ("memarch", "BenchmarkMetric"), ("memarch", "CachedMetric"),
    ("memarch.optimizers", "BenchmarkMetric"), ("memarch.optimizers", "CachedMetric"),
    ("memarch.optimizers.evaluators", "BenchmarkMetric"), ("memarch.optimizers.evaluators", "CachedMetric"),
    ("memarch.optimizers.landscapes.evaluator", "LandscapeMetric"),
    ("memarch.optimizers.landscapes.table", "LandscapeMetric"),
    ("memarch.pipeline.retrieval", "count_tokens"), ("memarch.pipeline.retrieval", "truncate_tokens"),
    ("memarch.optimizers.search.runner", "Metric"), ("memarch.optimizers.search.trial_function", "Metric"),
    ("memarch.optimizers.search.objectives", "cost_name"),
    ("memarch.benchmarks.evaluation.settings", "RENAMED"),
])
def test_an_old_module_level_name_is_gone(module, name):
    with pytest.raises(AttributeError):
        getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("module", ["memarch.optimizers.search.metric", "memarch.optimizers.evaluators.deprecated",
                                    "memarch.pipeline.deprecation"])
def test_an_old_module_is_gone(module):
    with pytest.raises(ImportError):
        importlib.import_module(module)


@pytest.mark.parametrize("old", [{"objective": "answer_recall"}, {"budget_tokens": 60}])
def test_old_keywords_of_evaluate_and_the_evaluator_are_refused(old, small_generated, hash_res):
    from memarch.benchmarks.evaluation.evaluate import evaluate
    from memarch.optimizers.evaluators import BenchmarkEvaluator

    with pytest.raises(TypeError, match=f"unknown evaluation setting '{next(iter(old))}'"):
        evaluate(ARCH, small_generated, split="search", resources=hash_res, limit=4, **old)
    with pytest.raises(TypeError, match="unknown evaluation setting"):
        BenchmarkEvaluator(small_generated, resources=hash_res, **old)
    assert not hasattr(BenchmarkEvaluator(small_generated, resources=hash_res), "kwargs")


def test_old_names_of_a_result_and_a_record_are_gone():
    from memarch.optimizers.search.history import TrialRecord
    from memarch.pipeline.evaluation_record import EvaluationRecord

    with pytest.raises(TypeError):
        TrialResult(ARCH, "b", "search", objective=0.25)
    result = TrialResult(ARCH, "b", "search", score=0.25)
    assert not hasattr(result, "objective")
    record = EvaluationRecord("generated", "answer_span", 80, 4)
    assert not hasattr(record, "objective") and not hasattr(record, "budget_tokens")
    assert not hasattr(TrialRecord(0, ARCH, 0.25, 0.0, result), "objective")


def test_old_names_of_the_optimizer_the_search_and_the_report_are_gone():
    from search_helpers import SyntheticMetric

    from memarch.optimizers.compile import MemarchOptimizer
    from memarch.optimizers.search.param_space import ParamSpace
    from memarch.optimizers.search.runner import Search

    with pytest.raises(TypeError, match="needs an evaluator"):
        MemarchOptimizer(metric=SyntheticMetric(n_queries=10), strategy="random", budget=3)
    opt = MemarchOptimizer(SyntheticMetric(n_queries=10), strategy="random", budget=3, warm_start="none")
    for old in ("metric", "search_space", "strategy_name", "budget"):
        assert not hasattr(opt, old), old
    opt.compile("experience")
    for old in ("study_name", "keys", "objective"):
        assert not hasattr(opt.report, old), old
    search = Search(SyntheticMetric(n_queries=10), ParamSpace.for_family("experience"), budget=2)
    assert not hasattr(search, "objective")


def test_old_names_of_a_program_are_gone(hash_resources):
    from memarch.pipeline.program import MemoryProgram

    with pytest.raises(TypeError):
        MemoryProgram(ARCH, resources=hash_resources, budget_tokens=80)
    program = MemoryProgram(ARCH, resources=hash_resources, context_budget=80)
    assert not hasattr(program, "budget_tokens")
    with pytest.raises(TypeError):
        program.read("anything", budget_tokens=10)


def test_old_names_of_a_landscape_and_a_memory_budget_are_gone(small_landscape):
    from memarch.benchmarks.evaluation.memory_budget import MemoryBudget
    from memarch.optimizers.landscapes.evaluator import LandscapeEvaluator
    from memarch.optimizers.landscapes.replay import Replay

    with pytest.raises(TypeError):
        LandscapeEvaluator(small_landscape, objective="answer_span")
    with pytest.raises(TypeError):
        Replay(small_landscape, objective="answer_span", budget=4)
    assert not hasattr(LandscapeEvaluator(small_landscape), "objective")
    assert not hasattr(small_landscape, "objectives") and not hasattr(small_landscape, "objective_values")
    assert not hasattr(MemoryBudget(words=100, spec="100"), "tokens")


def test_old_names_of_costs_and_splits_are_refused():
    from memarch.benchmarks import get_benchmark
    from memarch.errors import MemarchError
    from memarch.optimizers.search.objectives import parse_objectives
    from memarch.optimizers.search.selection import parse_selection

    with pytest.raises(MemarchError, match="unknown memory_tokens"):
        parse_objectives("quality,memory_tokens")
    with pytest.raises(MemarchError, match="memory_words<=5000"):
        parse_selection("memory_tokens<=5000", ("quality", "memory_words"))
    with pytest.raises(MemarchError, match="split_by must be one of"):
        get_benchmark("generated", conversations=4, split_by="unit")


# -- files saved by earlier code load --------------------------------------------------------------
def test_a_saved_program_of_earlier_code_loads(tmp_path, hash_resources):
    from memarch.benchmarks import recorded_benchmark
    from memarch.pipeline.program import MemoryProgram

    program = MemoryProgram(ARCH, resources=hash_resources, context_budget=80)
    data = json.loads(program.save(tmp_path / "p.json", include_memory=False).read_text())
    data["budget_tokens"] = data.pop("context_budget")
    data["evaluation"] = {"benchmark": "generated", "objective": "answer_span", "budget_tokens": 80, "top_k": 4,
                          "knobs": {"conversations": 4}, "split": {"seed": 0, "split_by": "unit"}}
    (tmp_path / "old.json").write_text(json.dumps(data))
    old = MemoryProgram.load(tmp_path / "old.json", resources=hash_resources)
    assert old.context_budget == 80
    assert (old.evaluation.metric, old.evaluation.context_budget) == ("answer_span", 80)
    assert recorded_benchmark(old.evaluation).split_by == "dialogue"  # "unit": the split's earlier name


def test_a_saved_result_of_earlier_code_loads():
    result = TrialResult(ARCH, "b", "search", score=0.25)
    old = {**result.to_dict(), "objective": 0.5, "metadata": {"objective": "qa_f1"}}
    del old["score"]
    again = TrialResult.from_dict(old)  # a --json file of earlier code
    assert (again.score, again.metadata["metric"]) == (0.5, "qa_f1")


def test_a_study_of_earlier_code_still_reads():
    """A study of earlier code stored ``objective`` / ``objective_name`` in its trials, its memory
    cost as ``memory_tokens``, and may optimise ``memory_tokens``."""
    import optuna

    from memarch.optimizers.search.history import expand
    from memarch.optimizers.search.study import OBJECTIVES_ATTR, open_study, study_objectives

    old = {"objective": 0.4, "objective_name": "answer_span", "cost": {"memory_tokens": 120.0, "memory_items": 3.0},
           "outcomes": [["q1", 0.4, False, "", None, {}]]}
    result = expand(ARCH, json.dumps(old))
    assert (result.score, result.metadata["metric"]) == (0.4, "answer_span")
    assert result.cost == {"memory_words": 120.0, "memory_items": 3.0}
    storage = optuna.storages.InMemoryStorage()
    study = optuna.create_study(study_name="old", storage=storage, directions=["maximize", "minimize"])
    study.set_user_attr("memarch_space", {"family": "experience"})
    study.set_user_attr(OBJECTIVES_ATTR, ["quality", "memory_tokens"])
    assert study_objectives(study) == ("quality", "memory_words")
    again = open_study("old", storage, optuna.samplers.RandomSampler(), space={"family": "experience"},
                       resume=True, objectives=("quality", "memory_words"))
    assert again.user_attrs[OBJECTIVES_ATTR] == ["quality", "memory_tokens"]  # the file is not rewritten


def test_a_landscape_of_earlier_code_loads(small_landscape, tmp_path):
    from memarch.optimizers.landscapes.table import Landscape

    arrays = {("cost_memory_tokens" if k == "cost_memory_words" else k): v for k, v in small_landscape.arrays.items()}
    meta = {("objectives" if k == "metrics" else k): v for k, v in small_landscape.meta.items()}
    np.savez_compressed(tmp_path / "old.npz", meta=np.array(json.dumps(meta)), **arrays)
    old = Landscape.load(tmp_path / "old.npz")
    assert old.metrics == small_landscape.metrics and "objectives" not in old.meta
    assert (old.cost("memory_words") == small_landscape.cost("memory_words")).all()
    arch = next(a for a in (old.architecture(i) for i in range(len(old))) if a is not None)
    assert old.result(arch, "test").score == small_landscape.result(arch, "test").score

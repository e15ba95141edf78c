"""Renamed public names keep working for one release, and each warns with its new name
(`memarch.pipeline.deprecation`); files saved by earlier releases still load."""
from __future__ import annotations

import json
import warnings

import pytest

from memarch.pipeline.architecture import Architecture
from memarch.pipeline.trial import TrialResult

ARCH = Architecture(("turn",), "vector", "hybrid", "lightweight")


def _warns(new: str):
    return pytest.warns(DeprecationWarning, match=f"use '{new}'")


def test_old_names_of_the_evaluators(small_generated, hash_res):
    from memarch.optimizers import evaluators
    from memarch.optimizers.evaluators import BenchmarkEvaluator, CachedEvaluator

    with _warns("BenchmarkEvaluator"):
        old = evaluators.BenchmarkMetric(small_generated, resources=hash_res, limit=4)
    assert isinstance(old, BenchmarkEvaluator) and not old(ARCH, "search").failed
    with _warns("CachedEvaluator"):
        assert isinstance(evaluators.CachedMetric(old), CachedEvaluator)
    with _warns("memarch.optimizers.evaluators.BenchmarkEvaluator"):
        from memarch.optimizers.search.metric import BenchmarkMetric  # the module path of earlier releases
    assert BenchmarkMetric is BenchmarkEvaluator
    with _warns("settings"):
        assert old.kwargs["budget_tokens"] == 200  # the evaluate keywords, now `settings`


def test_old_keywords_of_evaluate_and_the_evaluator(small_generated, hash_res):
    from memarch.benchmarks.evaluation.evaluate import evaluate
    from memarch.optimizers.evaluators import BenchmarkEvaluator

    with _warns("metric"), _warns("context_budget"):
        old = evaluate(ARCH, small_generated, split="search", resources=hash_res, limit=4, objective="answer_recall",
                       budget_tokens=60)
    new = evaluate(ARCH, small_generated, split="search", resources=hash_res, limit=4, metric="answer_recall",
                   context_budget=60)
    assert old.to_dict()["score"] == new.to_dict()["score"] and old.metadata["metric"] == "answer_recall"
    with _warns("context_budget"):
        ev = BenchmarkEvaluator(small_generated, resources=hash_res, budget_tokens=60)
    assert ev.settings.context_budget == 60
    with pytest.raises(TypeError, match="both"):
        evaluate(ARCH, small_generated, metric="answer_span", objective="answer_span")


def test_old_names_of_a_result_and_a_report():
    with _warns("score"):
        result = TrialResult(ARCH, "b", "search", objective=0.25)
    assert result.score == 0.25
    with _warns("score"):
        assert result.objective == 0.25
    old = {**result.to_dict(), "objective": 0.5, "metadata": {"objective": "qa_f1"}}
    del old["score"]
    again = TrialResult.from_dict(old)  # a --json file of an earlier release
    assert (again.score, again.metadata["metric"]) == (0.5, "qa_f1")


def test_old_names_of_the_optimizer_and_the_search():
    from search_helpers import SyntheticMetric

    from memarch.optimizers.compile import MemarchOptimizer, SearchSettings
    from memarch.optimizers.search.runner import Search
    from memarch.optimizers.search.param_space import ParamSpace

    with _warns("evaluator"):
        opt = MemarchOptimizer(metric=SyntheticMetric(n_queries=10), strategy="random", budget=3, warm_start="none")
    assert opt.settings == SearchSettings(strategy="random", budget=3, warm_start="none")
    opt.compile("experience")
    for old, new in (("study_name", "study"), ("keys", "evaluated"), ("objective", "metric")):
        with _warns(new):
            assert getattr(opt.report, old) == getattr(opt.report, new)
    search = Search(SyntheticMetric(n_queries=10), ParamSpace.for_family("experience"), budget=2)
    with _warns("trial_function"):
        assert search.objective is search.trial_function
    with pytest.raises(TypeError, match="SearchSettings"):
        MemarchOptimizer(SyntheticMetric(), "guided")  # settings by name, not positionally


def test_old_names_of_a_program_and_its_file(tmp_path, hash_resources):
    from memarch.pipeline.program import MemoryProgram

    with _warns("context_budget"):
        program = MemoryProgram(ARCH, resources=hash_resources, budget_tokens=80)
    with _warns("context_budget"):
        assert program.budget_tokens == 80 == program.context_budget
    with _warns("context_budget"):
        program.read("anything", budget_tokens=10)
    path = program.save(tmp_path / "p.json", include_memory=False)
    data = json.loads(path.read_text())
    data["budget_tokens"] = data.pop("context_budget")  # a file of an earlier release
    data["evaluation"] = {"benchmark": "generated", "objective": "answer_span", "budget_tokens": 80, "top_k": 4}
    (tmp_path / "old.json").write_text(json.dumps(data))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an old file loads without a warning: nothing the user did is deprecated
        old = MemoryProgram.load(tmp_path / "old.json", resources=hash_resources)
    assert old.context_budget == 80 and (old.evaluation.metric, old.evaluation.context_budget) == ("answer_span", 80)
    with _warns("metric"):
        assert old.evaluation.objective == "answer_span"


def test_old_names_of_a_landscape(small_landscape):
    from memarch.optimizers.landscapes.evaluator import LandscapeEvaluator
    from memarch.optimizers.landscapes.replay import Replay

    from memarch.optimizers.landscapes.evaluator import LandscapeMetric

    with _warns("memarch.optimizers.landscapes.evaluator.LandscapeEvaluator"):
        from memarch.optimizers.landscapes.table import LandscapeMetric as moved  # its module of earlier releases
    assert moved is LandscapeEvaluator
    with _warns("LandscapeEvaluator"):
        assert isinstance(LandscapeMetric(small_landscape), LandscapeEvaluator)
    with _warns("metric"):
        assert LandscapeEvaluator(small_landscape, objective="answer_span").metric == "answer_span"
    with _warns("metric"):
        assert Replay(small_landscape, objective="answer_span", budget=4).metric == "answer_span"
    with _warns("metrics"):
        assert small_landscape.objectives == small_landscape.metrics
    with _warns("metric_values"):
        assert (small_landscape.objective_values("test") == small_landscape.metric_values("test")).all()


def test_an_old_study_history_still_expands():
    """A study of an earlier release stored ``objective`` / ``objective_name`` in its trials."""
    from memarch.optimizers.search.history import expand

    old = {"objective": 0.4, "objective_name": "answer_span", "outcomes": [["q1", 0.4, False, "", None, {}]]}
    result = expand(ARCH, json.dumps(old))
    assert (result.score, result.metadata["metric"]) == (0.4, "answer_span")


def test_the_old_parameter_space_name():
    import memarch

    with _warns("ParamSpace"):
        assert memarch.SearchSpace is memarch.ParamSpace

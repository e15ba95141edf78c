"""The fair protocol: every strategy of a seed starts from the same round 0, budgets count distinct
evaluated architectures (repeats and invalid draws never consume them), failed trials stop a study
after N in a row with one clear line, the winning strategy is chosen on validation, failed
baselines are shown, and dialogue splits keep test conversations out of the search's memory."""
from __future__ import annotations

import optuna
import pytest

from search_helpers import SyntheticMetric

from memarch.errors import MemarchError
from memarch.optimizers.comparison import Comparison, compare
from memarch.optimizers.compile import CompileReport, MemarchOptimizer
from memarch.pipeline.presets import warm_start_architectures
from memarch.optimizers.search.runner import Search, StudyStopped
from memarch.optimizers.search.param_space import ParamSpace
from memarch.optimizers.search.study import make_storage, open_study
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.trial import TrialResult

optuna.logging.set_verbosity(optuna.logging.WARNING)


def test_every_strategy_of_a_seed_starts_from_the_same_round_0(space):
    cmp = compare(SyntheticMetric(n_queries=30), space, ["guided", "random", "tpe"], seeds=2, budget=6,
                  baselines=False)
    for seed in range(2):
        warm = [a.key() for a in warm_start_architectures(space, seed, 3)]
        for strategy, reports in cmp.runs.items():
            assert reports[seed].warm_start == warm
            assert reports[seed].evaluated[:3] == warm, strategy
            assert reports[seed].trials == 6 == len(set(reports[seed].evaluated))


def test_warm_start_none_starts_guided_from_random_draws(space):
    opt = MemarchOptimizer(SyntheticMetric(n_queries=30), strategy="guided", budget=8, warm_start="none")
    opt.compile(space)
    roles = [t.system_attrs.get("memarch:role") or t.user_attrs.get("role") for t in opt.study.trials
             if t.state == optuna.trial.TrialState.COMPLETE]
    assert opt.report.warm_start == [] and roles[0] is None and "exploit" in roles
    with pytest.raises(MemarchError):
        MemarchOptimizer(SyntheticMetric(), warm_start="all")


class _Repeating(optuna.samplers.RandomSampler):
    """Proposes a fixed list of architectures (with repeats), then the last one forever."""

    def __init__(self, ss, archs):
        super().__init__(seed=0)
        self.ss, self.archs, self.i = ss, archs, 0

    def infer_relative_search_space(self, study, trial):
        return self.ss.distributions()

    def sample_relative(self, study, trial, search_space):
        arch = self.archs[min(self.i, len(self.archs) - 1)]
        self.i += 1
        return self.ss.to_params(arch)


def _arch(*encoders, store="json", retrieve="hybrid", manage="lightweight"):
    return Architecture(tuple(encoders), store, retrieve, manage)


def test_repeats_never_consume_the_budget_and_are_counted(space):
    ss = ParamSpace(space)
    a, b, c = _arch("tip"), _arch("insight"), _arch("workflow")
    metric = SyntheticMetric(n_queries=20)
    study = open_study("r", make_storage(None), _Repeating(ss, [a, a, b, a, b, c]), space=ss.describe())
    search = Search(metric, ss, budget=3)
    history = search.run(study)
    assert [r.architecture.key() for r in history.records] == [a.key(), b.key(), c.key()]
    assert search.stats()["repeats"] == 3 and history.repeats == 3
    assert metric.calls == [a.key(), b.key(), c.key()]  # each evaluated once
    repeat = next(t for t in study.trials if "repeat_of" in t.user_attrs)
    assert repeat.value == study.trials[repeat.user_attrs["repeat_of"]].value


def test_a_stuck_strategy_stops_with_a_clear_reason(space):
    ss = ParamSpace(space)
    study = open_study("s", make_storage(None), _Repeating(ss, [_arch("tip")]), space=ss.describe())
    with pytest.raises(StudyStopped, match="evaluated nothing new"):
        Search(SyntheticMetric(n_queries=5), ss, budget=3, stuck_limit=10).run(study)
    assert len(study.trials) == 11


class _Failing(SyntheticMetric):
    def __call__(self, arch, data="search"):
        self.calls.append(arch.key() if arch else "none")
        return TrialResult(arch, "synthetic", str(data), 0.0, failed=True, error="ConnectionError: endpoint down")


def test_consecutive_failures_stop_the_study_with_one_line(space):
    metric = _Failing()
    opt = MemarchOptimizer(metric, strategy="random", budget=50, max_failures=5)
    with pytest.raises(StudyStopped) as info:
        opt.compile(space)
    msg = str(info.value)
    assert "5 consecutive trials failed" in msg and "endpoint down" in msg and "\n" not in msg
    assert len(metric.calls) == 5
    assert isinstance(info.value, MemarchError)  # the CLI prints it as one line, exit 2


def _report(strategy, val, test, seed=0):
    return CompileReport("s", strategy, seed, _arch("tip"), 0.5, val, test, {}, [0.5], 1, 0, 0.0, 0.0)


def test_the_winner_is_chosen_on_validation_not_test():
    cmp = Comparison(budget=1, target=0.5, runs={"a": [_report("a", 0.9, 0.1)], "b": [_report("b", 0.2, 0.95)]})
    assert cmp.winner() == "a"
    assert "winner (median validation score of the picks): a" in cmp.table()


class _PresetFails(SyntheticMetric):
    def __call__(self, arch, data="search"):
        if arch is not None and arch.key() == "tip|vector|hybrid|json_full" and data == "test":  # mem0
            return TrialResult(arch, "synthetic", str(data), 0.0, failed=True, error="boom")
        return super().__call__(arch, data)


def test_a_failed_baseline_is_shown_not_dropped(space):
    cmp = compare(_PresetFails(n_queries=20), space, ["random"], seeds=1, budget=3)
    assert cmp.failed_baselines == {"mem0": "boom"}
    assert "baseline mem0 FAILED" in cmp.table()


def test_dialogue_split_keeps_test_conversations_out_of_the_search_memory():
    from memarch.benchmarks import get_benchmark

    bench = get_benchmark("generated", conversations=8, sessions=3)
    assert bench.split_by == "dialogue"  # the default with >= 6 dialogues
    names = {s: {d.namespace for d in bench.split(s).dialogues} for s in ("search", "validation", "test")}
    assert [len(names[s]) for s in ("search", "validation", "test")] == [4, 2, 2]
    assert not names["search"] & names["test"] and not names["validation"] & names["test"]
    assert get_benchmark("generated", conversations=4, sessions=3).split_by == "question"
    q = get_benchmark("generated", conversations=8, sessions=3, split_by="question")
    assert {d.namespace for d in q.split("test").dialogues} & {d.namespace for d in q.split("search").dialogues}


def test_compare_refuses_an_existing_study_before_running_any(space, tmp_path):
    storage = f"sqlite:///{tmp_path / 'studies.db'}"
    compare(SyntheticMetric(n_queries=20), space, ["random"], seeds=1, budget=4, baselines=False, storage=storage)
    with pytest.raises(MemarchError, match="already exists .1 of this compare's 2 do"):
        compare(SyntheticMetric(n_queries=20), space, ["guided", "random"], seeds=1, budget=4, baselines=False,
                storage=storage)
    names = optuna.study.get_all_study_names(make_storage(storage))
    assert not any("guided" in n for n in names)  # guided did not run before the clash was found

"""The `archive` strategy (ALMA): parent draws follow softmax(T=0.5) of sigmoid(objective - no
memory) - 0.5 log1p(visits); the archive and its visits live in the study (resume, two workers);
parent -> child lineage on the trials, in MLflow and in the rounds; it runs in compile and replay."""
from __future__ import annotations

import math
import warnings

import numpy as np
import optuna
import pytest
from optuna.trial import TrialState

from search_helpers import SyntheticMetric

from memarch.optimizers.compile import MemarchOptimizer
from memarch.optimizers.samplers.guided.archive import (NO_MEMORY_ATTR, ROUND_PREFIX, Archive,
                                               parent_probabilities, sample_parents)
from memarch.optimizers.samplers.guided.archive_sampler import ArchiveSampler
from memarch.optimizers.samplers.guided.edits import describe
from memarch.optimizers.search.history import History, TrialRecord
from memarch.optimizers.search.runner import Search
from memarch.optimizers.search.param_space import ParamSpace
from memarch.optimizers.samplers.strategies import make_sampler
from memarch.optimizers.search.study import make_storage, open_study
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.trial import TrialResult

optuna.logging.set_verbosity(optuna.logging.WARNING)

OBJECTIVES = [0.2, 0.5, 0.5, 0.8, 0.1]
VISITS = [0, 3, 0, 1, 7]
NO_MEMORY = 0.1


def _expected() -> np.ndarray:
    """The formula written out by hand."""
    w = [math.exp((1 / (1 + math.exp(-(o - NO_MEMORY))) - 0.5 * math.log(1 + v)) / 0.5)
         for o, v in zip(OBJECTIVES, VISITS)]
    return np.array(w) / sum(w)


def _crafted_archive() -> Archive:
    archs = [Architecture((e,), "json", "hybrid", "lightweight") for e in ("tip", "insight", "workflow", "shortcut",
                                                                           "trajectory")]
    records = [TrialRecord(i, a, o, 0.0, TrialResult(a, "b", "search", o)) for i, (a, o) in
               enumerate(zip(archs, OBJECTIVES))]
    visits = {a.key(): v for a, v in zip(archs, VISITS)}
    from collections import Counter

    return Archive(records, Counter(visits), NO_MEMORY, "test")


def test_parent_probabilities_match_the_formula():
    expected = _expected()
    assert np.allclose(parent_probabilities(OBJECTIVES, VISITS, NO_MEMORY), expected, atol=1e-12)
    assert np.allclose(_crafted_archive().probabilities(), expected, atol=1e-12)
    # same objective, 3 visits against none: at T=0.5 the visit term divides the weight by 1+3
    p = expected
    assert p[1] / p[2] == pytest.approx(1 / 4)


def test_seeded_draws_follow_the_formula():
    expected, n = _expected(), 20000
    rng = np.random.default_rng(0)
    draws = np.array([sample_parents(rng, expected, 1)[0] for _ in range(n)])
    freq = np.bincount(draws, minlength=len(expected)) / n
    se = np.sqrt(expected * (1 - expected) / n)
    assert np.all(np.abs(freq - expected) < 5 * se), (freq, expected)
    # up to k distinct parents, each draw by the formula
    parents = _crafted_archive().sample(np.random.default_rng(1), 3)
    assert 1 <= len(parents) <= 3 and len({r.number for r in parents}) == len(parents)


def _run(study, space, budget, no_memory=None, seed=0):
    ss = ParamSpace(space)
    sampler = ArchiveSampler(ss, k=3, seed=seed, no_memory=no_memory)
    study.sampler = sampler
    Search(SyntheticMetric(n_queries=30), ss, budget=budget).run(study)
    return sampler


def _children(sampler):
    return sum(len(r["proposals"]) for r in sampler.rounds)


def _round_records(study):
    return {k: v for k, v in study.user_attrs.items() if k.startswith(ROUND_PREFIX)}


def test_lineage_on_trials_and_rounds(space):
    ss = ParamSpace(space)
    study = open_study("lineage", make_storage(None), make_sampler("archive", ss, seed=0), space=ss.describe())
    sampler = _run(study, space, 15, no_memory=lambda: SyntheticMetric(n_queries=30)(None, "search"))
    assert study.user_attrs[NO_MEMORY_ATTR]["source"] == "the no-memory agent on the search data"
    by_number = {t.number: t for t in study.trials}
    children = [t for t in study.trials if t.state == TrialState.COMPLETE and t.user_attrs.get("role") == "archive"]
    assert len(children) >= 8
    for t in children:
        parent = by_number[t.user_attrs["parent_trial"]]
        assert parent.number < t.number
        parent_arch = Architecture.from_dict(parent.user_attrs["architecture"])
        assert parent_arch.key() == t.user_attrs["parent"]
        assert t.user_attrs["edit"] == describe(parent_arch, Architecture.from_dict(t.user_attrs["architecture"]))
    # the history (and so the ledger) reads the lineage; the rounds hold parents, diagnoses, children
    assert sum(bool(r.parent) for r in History.from_study(study).records) == len(children)
    rnd = sampler.rounds[0]
    assert rnd["parents"][0]["diagnosis"]["histogram"] and rnd["parents"][0]["gradient"]["primary_signal"]
    assert sum(rnd["p"] for rnd in [*rnd["archive"]]) == pytest.approx(1.0)
    assert sum(len(v["parents"]) for v in _round_records(study).values()) == _children(sampler)
    assert sampler.stats()["no_memory_evaluations"] == 1


def test_archive_and_visits_persist_across_resume(space, tmp_path):
    url = f"sqlite:///{tmp_path}/optuna.db"
    ss = ParamSpace(space)
    study = open_study("resume", make_storage(url), make_sampler("archive", ss), space=ss.describe())
    first = _run(study, space, 7, no_memory=0.05)
    visits_before = Archive.from_study(study).visits
    assert sum(visits_before.values()) == _children(first) > 0
    resumed = open_study("resume", make_storage(url), make_sampler("archive", ss), space=ss.describe(), resume=True)
    second = _run(resumed, space, 11, no_memory=lambda: pytest.fail("the study already holds the no-memory score"))
    archive = Archive.from_study(resumed)
    assert archive.no_memory == 0.05 and len(archive) == 11
    assert sum(archive.visits.values()) == _children(first) + _children(second)
    assert all(archive.visits[k] >= v for k, v in visits_before.items())
    # the resumed sampler's first draw already saw the first run's visits
    first_round = second.rounds[0]["archive"]
    assert sum(a["visits"] for a in first_round) == _children(first)
    tags = {k.split(":")[1] for k in _round_records(resumed)}
    assert tags == {first.tag, second.tag}


@pytest.mark.parametrize("failed", [False, True])
def test_a_no_memory_result_is_read_without_its_deprecated_name(space, failed):
    """The no-memory callable may return a `TrialResult`: its score is kept (a failed one counts as
    a fallback, gains from 0), read by its type: a probe for ``objective`` (a name of earlier code)
    used to fire that name's deprecation warning on every such study."""
    def no_memory():
        result = SyntheticMetric(n_queries=30)(None, "search")
        result.failed = failed
        return result

    study = open_study("no-memory", make_storage(None), make_sampler("archive", ParamSpace(space)),
                       space=ParamSpace(space).describe())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sampler = _run(study, space, 5, no_memory=no_memory)
    assert not [str(w.message) for w in caught if "objective" in str(w.message)]
    assert sampler.stats()["no_memory_evaluations"] == 1
    assert sampler.stats()["no_memory_fallbacks"] == int(failed)
    assert (NO_MEMORY_ATTR in study.user_attrs) == (not failed)
    if not failed:
        assert study.user_attrs[NO_MEMORY_ATTR]["value"] == pytest.approx(no_memory().score)


def test_two_workers_share_one_archive(tmp_path):
    from search_helpers import load_shared_study as _load
    from search_helpers import start_two_workers
    from search_helpers import wait_workers as _wait

    url = f"sqlite:///{tmp_path}/optuna.db"
    budget = 12
    # The first worker creates the tables and the study; the second joins it once it has a trial done.
    _wait(start_two_workers(url, "archive", budget, delay=0.05))
    study = _load(url)
    # The budget of distinct architectures is met. (Not `_check_distinct`'s exact count: two workers
    # that draw the same child at the same moment can both evaluate it — the objective's duplicate
    # check needs the other trial's params set — which guided's identical rounds share.)
    history = History.from_study(study)
    assert len(history) >= budget and history.repeats <= 2
    rounds = _round_records(study)
    assert len({k.split(":")[1] for k in rounds}) == 2, "both workers drew parents from the shared archive"
    archive = Archive.from_study(study)
    assert sum(archive.visits.values()) == sum(len(r["parents"]) for r in rounds.values())
    done = {t.number: t for t in study.trials if t.state == TrialState.COMPLETE}
    for t in done.values():
        if t.user_attrs.get("role") == "archive":
            assert t.user_attrs["parent_trial"] in done


def test_archive_runs_in_compile_with_mlflow_lineage(space, tmp_path):
    from memarch.optimizers.tracking.tracker import Tracker

    tracker = Tracker(f"sqlite:///{tmp_path}/mlflow.db", artifact_root=tmp_path / "artifacts")
    opt = MemarchOptimizer(SyntheticMetric(n_queries=20), strategy="archive", budget=6, tracker=tracker,
                           log_model=False)
    opt.compile(space)
    counts = opt.report.counts
    assert counts["parents_drawn"] >= 3 and counts["no_memory_evaluations"] == 1 and counts["evaluated"] == 6
    assert opt.study.user_attrs[NO_MEMORY_ATTR]["value"] == SyntheticMetric(n_queries=20)(None, "search").score
    runs = tracker.client.search_runs([tracker.experiment_id], max_results=100)
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == tracker.parent_run_id]
    lineage = [r for r in children if r.data.params.get("role") == "archive"]
    assert lineage and all(r.data.params["parent"] != "-" for r in lineage)
    rounds = [a.path for a in tracker.client.list_artifacts(tracker.parent_run_id, "rounds")]
    assert rounds


def test_archive_runs_in_the_landscape_replay(small_generated, hash_res, tmp_path):
    from memarch.optimizers.landscapes.build import build, plan_build
    from memarch.pipeline.presets import warm_start_architectures
    from memarch.optimizers.landscapes.replay import Replay

    land = build(plan_build(small_generated, resources=hash_res, sample=20, seed=0),
                 tmp_path / "l.npz", progress=False)
    replay = Replay(land, budget=6, horizon=6)
    report = replay.run_all(["archive"], range(2))
    for run in report.runs:
        assert run.keys[:3] == [a.key() for a in warm_start_architectures(replay.space, run.seed, 3)]
        assert len(run.keys) == len(set(run.keys)) and run.pick in run.keys[:6]
    archive_runs = [r for r in report.runs if r.strategy == "archive"]
    assert all(r.counts["parents_drawn"] > 0 and r.counts["no_memory_evaluations"] == 1 for r in archive_runs)
    assert "archive" in report.table()

"""Resumable, distributed studies: a worker killed with SIGKILL mid-study is resumed without
losing or duplicating finished trials; two worker processes share one study on sqlite and on a
real PostgreSQL server on loopback."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState
from search_helpers import assert_alive, completed_trials, running_trials_stale, start_two_workers, wait_until
from search_helpers import load_shared_study as _load
from search_helpers import start_worker as _worker
from search_helpers import wait_workers as _wait

from postgres_helpers import running_postgres


def _check_distinct(study: optuna.Study, budget: int) -> None:
    # A repeat of an evaluated architecture is COMPLETE (the sampler learns from it) but marked and
    # not counted: the budget is distinct evaluated architectures.
    done = [t for t in study.trials if t.state == TrialState.COMPLETE and "repeat_of" not in t.user_attrs]
    assert len(done) == budget, [t.state for t in study.trials]
    assert len({t.number for t in done}) == budget
    assert len({str(t.user_attrs["architecture"]) for t in done}) == budget
    # every completed trial evaluated its own architecture once: no trial ran twice
    retried_from = [t.system_attrs.get("failed_trial") for t in done if "failed_trial" in t.system_attrs]
    assert len(retried_from) == len(set(retried_from))


def test_sigkill_mid_study_then_resume_loses_and_duplicates_nothing(tmp_path):
    _kill_then_resume(tmp_path, "quality")


def test_multi_objective_study_resumes_after_sigkill(tmp_path):
    study = _kill_then_resume(tmp_path, "quality,memory_words", budget=8, kill_after=3)
    assert len(study.directions) == 2
    assert all(len(t.values) == 2 for t in study.trials if t.state == TrialState.COMPLETE)


def _kill_then_resume(tmp_path, objectives: str, budget: int = 12, kill_after: int = 4) -> optuna.Study:
    url = f"sqlite:///{tmp_path}/optuna.db"
    p = _worker(url, "guided", 0, budget, delay=0.4, objectives=objectives)

    def finished_enough() -> bool:
        assert_alive(p, f"{kill_after} trials were complete")  # it must still be running when killed
        return completed_trials(url) >= kill_after
    try:
        wait_until(finished_enough, timeout=90, interval=0.3, what=f"{kill_after} complete trials")
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    before = {t.number: t.params for t in _load(url).trials if t.state == TrialState.COMPLETE}
    assert kill_after <= len(before) < budget
    # The resumed worker's first `fail_stale` must fail the killed worker's running trial: wait until
    # its heartbeat is past the grace period (or, with no heartbeat, three grace periods old).
    wait_until(lambda: running_trials_stale(url), timeout=60, interval=0.2,
               what="the killed worker's running trial to go stale")
    _wait([_worker(url, "guided", 0, budget, delay=0.0, objectives=objectives)])
    study = _load(url)
    after = {t.number: t.params for t in study.trials if t.state == TrialState.COMPLETE}
    assert all(after.get(n) == params for n, params in before.items())  # nothing lost
    _check_distinct(study, budget)
    states = [t.state for t in study.trials]
    if TrialState.FAIL in states:  # the killed trial was failed by the heartbeat and re-run
        failed = [t for t in study.trials if t.state == TrialState.FAIL]
        retries = [t for t in study.trials if t.system_attrs.get("failed_trial") == failed[0].number]
        assert len(retries) == 1 and retries[0].state == TrialState.COMPLETE
        lost = failed[0].system_attrs.get("fixed_params", failed[0].params)
        # Killed after (part of) its architecture was drawn: the retry keeps every value drawn and
        # draws only what the kill cut short (nothing at all when it died before the first one).
        assert {name: retries[0].params.get(name) for name in lost} == dict(lost)
    assert TrialState.RUNNING not in states
    return study


def test_two_workers_share_one_sqlite_study(tmp_path):
    url = f"sqlite:///{tmp_path}/optuna.db"
    budget = 10
    _wait(start_two_workers(url, "random", budget))
    _check_distinct(_load(url), budget)


@pytest.fixture
def postgres():
    with running_postgres() as url:
        yield url


def test_two_workers_share_one_postgresql_study(postgres):
    budget = 10
    _wait(start_two_workers(postgres, "tpe", budget))
    _check_distinct(_load(postgres), budget)


def test_running_trials_that_take_no_slot_do_not_hold_the_last_one():
    # Regression (flaky two-worker test): worker A's trial pruned as over budget was still RUNNING
    # (sleeping) when worker B counted the slots, so B's trial was pruned as over budget too, and so
    # on back and forth until StopWhenStuck stopped the study one architecture short.
    from memarch.optimizers.search.history import ARCH_ATTR, REPEAT_ATTR, RESULT_ATTR
    from memarch.optimizers.search.trial_function import distinct_taken

    study = optuna.create_study(direction="maximize")
    for i in range(3):  # three distinct evaluated architectures
        t = study.ask()
        t.set_user_attr(ARCH_ATTR, {"encode": ["tip"], "store": f"s{i}", "retrieve": "r", "manage": "m"})
        t.set_user_attr(RESULT_ATTR, "{}")
        study.tell(t, 0.5)
    evaluating = study.ask()  # trial 3: a lower-numbered worker is evaluating; it holds a slot
    over = study.ask()        # trial 4: pruned as over budget, still sleeping
    over.set_user_attr("over_budget", True)
    invalid = study.ask()     # trial 5: invalid draw, about to be pruned
    invalid.set_user_attr("invalid", "[encode-nonempty] ...")
    repeat = study.ask()      # trial 6: a repeat, about to return the first trial's value
    repeat.set_user_attr(REPEAT_ATTR, 0)
    assert distinct_taken(study, before=7) == 4
    assert distinct_taken(study, before=4) == 4
    assert distinct_taken(study, before=3) == 3
    assert distinct_taken(study) == 3
    study.tell(evaluating, state=TrialState.PRUNED)
    assert distinct_taken(study, before=7) == 3

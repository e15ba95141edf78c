"""Replaying a sampled landscape (issue 20, item 4): every strategy draws among the landscape's own
architectures — random uniformly without replacement, the others with their proposals outside the
landscape replaced by the nearest architecture it holds (counted as ``snapped``) — and a run stops at
the landscape's size, so a replay with a horizon beyond it ends in seconds with every key in it."""
from __future__ import annotations

import optuna
import pytest

from memarch.optimizers.landscapes.replay import Replay
from memarch.optimizers.landscapes.snap import NOT_IN_LANDSCAPE, SNAPPED_ATTR, Snap, landscape_architectures, random_order
from memarch.optimizers.search.param_space import ParamSpace
from memarch.pipeline.presets import warm_start_architectures


@pytest.fixture(scope="module")
def land(small_landscape):
    return small_landscape


def test_the_horizon_stops_at_the_landscapes_size(land):
    replay = Replay(land, budget=8, horizon=10_000)
    size = len(landscape_architectures(land))
    assert replay.sampled and replay.size == size and replay.horizon == size and replay.budget == 8
    assert Replay(land, budget=500).budget == size


@pytest.mark.parametrize("strategy", ["random", "tpe", "guided", "archive"])
def test_every_strategy_draws_only_the_landscapes_architectures(land, strategy):
    replay = Replay(land, budget=8, horizon=40)
    run = replay.run(strategy, 3)
    assert run.stopped is None and len(run.keys) == 40 == len(set(run.keys))
    assert all(k in land for k in run.keys)
    assert run.keys[:3] == [a.key() for a in warm_start_architectures(replay.space, 3, 3)]
    if strategy == "random":  # the table in a seeded order: nothing drawn outside it, nothing snapped
        assert run.counts["invalid"] == 0 and "snapped" not in run.counts
    else:  # every proposal the landscape lacks is pruned and replaced, and both are counted
        assert 0 <= run.counts["snapped"] <= run.counts["invalid"]


def test_random_is_a_seeded_permutation_of_the_table(land):
    everything = {a.key() for a in landscape_architectures(land)}
    a, b = random_order(land, 0, set()), random_order(land, 1, set())
    assert {x.key() for x in a} == everything == {x.key() for x in b} and len(a) == len(everything)
    assert [x.key() for x in a] != [x.key() for x in b]
    assert [x.key() for x in a] == [x.key() for x in random_order(land, 0, set())]
    skip = {a[0].key()}
    assert skip.isdisjoint(x.key() for x in random_order(land, 0, skip))
    r1, r2 = Replay(land, budget=6, horizon=20).run("random", 5), Replay(land, budget=6, horizon=20).run("random", 5)
    assert r1.keys == r2.keys


def test_snap_queues_the_nearest_architecture_not_yet_taken(land):
    ss = ParamSpace(Replay(land, budget=4).space)
    snap = Snap(land, ss, seed=0)
    archs = landscape_architectures(land)
    target = archs[0]
    params = ss.to_params(target)
    assert snap.nearest(params, set()).key() == target.key()  # itself: zero params differ
    other = snap.nearest(params, {target.key()})
    assert other is not None and other.key() != target.key()
    differ = lambda a: sum(ss.to_params(a)[n] != params[n] for n in params)  # noqa: E731
    assert differ(other) == min(differ(a) for a in archs if a.key() != target.key())
    assert snap.nearest(params, {a.key() for a in archs}) is None


class _TrialFunction:
    def __init__(self):
        self.invalid, self.evaluated, self.pruned = [], [], []


class _Search:
    def __init__(self):
        self.trial_function = _TrialFunction()


def test_snap_fires_only_on_a_draw_the_landscape_lacks(land):
    ss = ParamSpace(Replay(land, budget=4).space)
    snap = Snap(land, ss, seed=0)
    snap.search = _Search()
    study = optuna.create_study(direction="maximize")
    params = ss.to_params(landscape_architectures(land)[0])
    trial = study.ask({n: d for n, d in ss.distributions().items()})
    frozen = study.tell(trial, state=optuna.trial.TrialState.PRUNED)
    snap.search.trial_function.invalid.append((trial.number, "x", "retriever-store"))  # invalid for another reason
    snap(study, frozen)
    assert snap.snapped == 0 and not study.get_trials(states=(optuna.trial.TrialState.WAITING,))
    snap.search.trial_function.invalid.append((trial.number, "x", NOT_IN_LANDSCAPE))
    snap(study, frozen)
    waiting = study.get_trials(states=(optuna.trial.TrialState.WAITING,))
    assert snap.snapped == 1 and len(waiting) == 1 and SNAPPED_ATTR in waiting[0].user_attrs
    assert ss.from_params(ss.params_of(waiting[0])).key() in land  # a landscape architecture, queued

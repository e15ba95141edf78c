"""The hybrid strategy (TPE steered by guided's diagnosis, the "Centaur" shape): with no overrides it is
TPE run for run; its overrides are the moves the leader's traces name, counted and bounded; it
refuses a minimising study like guided."""
from __future__ import annotations

import optuna
import pytest

from memarch.errors import MemarchError
from memarch.optimizers.compile.counts import COUNT_WORDS
from memarch.optimizers.landscapes.build import build, plan_build
from memarch.optimizers.landscapes.levers import parse_levers
from memarch.optimizers.landscapes.replay import Replay
from memarch.optimizers.samplers import strategies
from memarch.optimizers.samplers.guided.hybrid import HybridSampler
from memarch.optimizers.samplers.strategies import make_sampler
from memarch.optimizers.search.param_space import ParamSpace


@pytest.fixture(scope="module")
def lever_land(small_generated, hash_res, tmp_path_factory):
    plan = plan_build(small_generated, resources=hash_res, sample=10, seed=1,
                      levers=parse_levers("retrieve.pack=0,1;retrieve.pack_compact=0,1"))
    return build(plan, tmp_path_factory.mktemp("hybrid") / "levers.npz", progress=False)


def test_the_strategy_is_registered_and_its_counts_have_words():
    sampler = make_sampler("hybrid", ParamSpace.for_family("conversation"), seed=0)
    assert isinstance(sampler, HybridSampler)
    assert set(sampler.stats()) <= set(COUNT_WORDS)
    with pytest.raises(ValueError):
        HybridSampler("conversation", max_share=1.5)


def test_without_overrides_it_is_tpe_run_for_run(small_landscape, monkeypatch):
    monkeypatch.setitem(strategies.STRATEGIES, "hybrid",
                        lambda space, seed, **_: HybridSampler(space, seed=seed, max_share=0.0))
    replay = Replay(small_landscape, budget=10, horizon=20)
    for seed in (0, 1):
        hybrid, tpe = replay.run("hybrid", seed), replay.run("tpe", seed)
        assert hybrid.keys == tpe.keys and hybrid.pick == tpe.pick
        assert hybrid.counts["overrides"] == 0 and hybrid.counts["classical_trials"] > 0


def test_overrides_are_traced_moves_counted_and_bounded(lever_land):
    replay = Replay(lever_land, budget=10, horizon=30)
    total = 0
    for seed in range(4):
        run = replay.run("hybrid", seed)
        c = run.counts
        total += c["overrides"]
        assert c["overrides"] == c["override_moves"] + c["override_edits"]
        # at most a third of the trials after the warm start (3) are guided's
        assert c["overrides"] <= (len(run.keys) - 3 + 1) / 3
    assert total > 0  # the traces name moves on this table: the diagnosis does steer


def test_an_override_records_its_move_and_why(lever_land, monkeypatch):
    made = []

    def make(space, seed, **_):
        made.append(HybridSampler(space, seed=seed))
        return made[-1]

    monkeypatch.setitem(strategies.STRATEGIES, "hybrid", make)
    run = Replay(lever_land, budget=10, horizon=30).run("hybrid", 2)
    sampler = made[-1]
    assert sampler.rounds, "no override on this table"
    for r in sampler.rounds:
        assert r["kind"] in ("move", "edit") and r["edit"] and r["reason"]
        assert r["leader"] in run.keys  # it edits an evaluated architecture, the leader at the time
        assert sampler.round_of(r["trial"]) is r
    assert sampler.round_of(-1) is None
    moves = [r for r in sampler.rounds if r["kind"] == "move"]
    assert all("of the retrieve failures" in r["reason"] for r in moves)  # backed by traces, with shares


def test_a_minimising_study_is_refused():
    sampler = HybridSampler("conversation", seed=0)
    study = optuna.create_study(direction="minimize", sampler=sampler)
    with pytest.raises(MemarchError, match="maximising"):
        study.optimize(lambda t: ParamSpace.for_family("conversation").suggest(t) and 0.0, n_trials=1)

"""Multi-fidelity evaluation (issue 20): a trial scored dialogue by dialogue, reported to an Optuna
pruner, stopped early when it says so; a pruned trial is PRUNED with its partial outcomes and costs
the share of dialogues it saw; budgets count full-evaluation equivalents; a replay without a pruner
is today's replay, and a staged one that never prunes finds exactly the same architectures."""
from __future__ import annotations

import optuna
import pytest
from optuna.trial import TrialState

from memarch.benchmarks import get_benchmark
from memarch.benchmarks.evaluation.evaluate import evaluate
from memarch.errors import MemarchError
from memarch.optimizers.samplers.guided.ledger import REFUTED, Ledger
from memarch.optimizers.landscapes import replay as replay_mod
from memarch.optimizers.landscapes.build import build, plan_build
from memarch.optimizers.landscapes.replay import Replay
from memarch.optimizers.landscapes.evaluator import LandscapeEvaluator
from memarch.optimizers.pruners import PRUNERS, instance_of, make_pruner, staged
from memarch.optimizers.search.history import FIDELITY_ATTR, RESULT_ATTR, History, fidelity_of
from memarch.optimizers.evaluators import BenchmarkEvaluator, CachedEvaluator, as_evaluator
from memarch.optimizers.search.param_space import ParamSpace
from memarch.optimizers.search.runner import Search
from memarch.optimizers.search.study import make_storage, open_study
from memarch.optimizers.search.trial_function import distinct_taken
from memarch.optimizers.samplers.strategies import make_sampler
from memarch.optimizers.landscapes.replay import LandscapeSubspace
from memarch.optimizers.landscapes.snap import Snap
from memarch.pipeline.architecture import Architecture

MEMP = Architecture(("turn", "event"), "vector", "hybrid", "json_full")

optuna.logging.set_verbosity(optuna.logging.WARNING)


@pytest.fixture(scope="module")
def bench():
    return get_benchmark("generated", conversations=8, sessions=2)  # split by dialogue: 4 in search


@pytest.fixture(scope="module")
def land(bench, hash_res, tmp_path_factory):
    plan = plan_build(bench, resources=hash_res, sample=30, seed=0)
    return build(plan, tmp_path_factory.mktemp("fid") / "fid.npz", progress=False)


def test_pruner_names_and_errors():
    kinds = {n: type(make_pruner(n, 4)).__name__ for n in PRUNERS}
    assert kinds == {"none": "NopPruner", "median": "MedianPruner", "sha": "SuccessiveHalvingPruner",
                     "hyperband": "HyperbandPruner", "wilcoxon": "WilcoxonPruner"}
    with pytest.raises(MemarchError, match="unknown pruner 'asha'"):
        make_pruner("asha")
    with pytest.raises(MemarchError, match="unknown pruner"):
        replay_mod.parse_strategy("tpe+bogus")
    assert instance_of("conv-26/q3") == "conv-26" and instance_of("q3") == ""


def test_live_evaluation_dialogue_by_dialogue_equals_the_whole_and_stops_where_asked(bench, hash_res):
    whole = evaluate(MEMP, bench, split="search", resources=hash_res)
    seen = []
    full = evaluate(MEMP, bench, split="search", resources=hash_res,
                    on_instance=lambda d, n, s: seen.append((d, n, len(s))) or False)
    assert [o.query_id for o in full.outcomes] == [o.query_id for o in whole.outcomes]
    assert full.score == pytest.approx(whole.score) and full.metadata["instances"] == {"done": 4, "total": 4}
    assert [(d, n) for d, n, _ in seen] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert sum(k for _, _, k in seen) == len(whole.outcomes)
    cut = evaluate(MEMP, bench, split="search", resources=hash_res, on_instance=lambda d, n, s: d == 2)
    assert cut.metadata["instances"] == {"done": 2, "total": 4}
    assert len(cut.outcomes) == seen[0][2] + seen[1][2]
    assert [o.query_id for o in cut.outcomes] == [o.query_id for o in whole.outcomes[:len(cut.outcomes)]]
    assert len({instance_of(o.query_id) for o in cut.outcomes}) == 2
    assert cut.score == pytest.approx(sum(o.score for o in cut.outcomes) / len(cut.outcomes))
    metric = BenchmarkEvaluator(bench, resources=hash_res)
    assert metric.supports_instances() and CachedEvaluator(metric).supports_instances()
    assert not as_evaluator(lambda a, d: None).supports_instances()


def test_a_landscape_lookup_is_handed_out_the_same_way(land):
    metric = LandscapeEvaluator(land)
    whole = metric(MEMP, "search")
    part = metric(MEMP, "search", on_instance=lambda d, n, s: d == 1)
    assert part.metadata["instances"] == {"done": 1, "total": 4}
    first = instance_of(whole.outcomes[0].query_id)
    assert [o.query_id for o in part.outcomes] == [o.query_id for o in whole.outcomes
                                                   if instance_of(o.query_id) == first]
    assert staged(whole, lambda d, n, s: False) is whole


def _search(land, pruner, budget, *, storage=None, name="s", strategy="tpe", seed=0):
    space = ParamSpace(LandscapeSubspace(land))
    study = open_study(name, storage or make_storage(None), make_sampler(strategy, space, seed=seed, k=3),
                       space=space.describe(), pruner=make_pruner(pruner, 4), resume=True)
    snap = Snap(land, space, seed=seed)  # strategies draw among the sampled landscape's rows
    search = Search(LandscapeEvaluator(land), space, budget=budget, pruner=pruner, stuck_limit=400, callbacks=[snap])
    snap.search = search
    return study, search, search.run(study)


def test_a_pruned_trial_keeps_its_partial_outcomes_and_costs_its_share(land):
    study, search, history = _search(land, "sha", 8)
    pruned = [t for t in study.trials if t.state == TrialState.PRUNED and FIDELITY_ATTR in t.user_attrs]
    assert pruned, "successive halving prunes some of 8+ trials at the first rung"
    for t in pruned:
        assert 0 < t.user_attrs[FIDELITY_ATTR] < 1 and RESULT_ATTR in t.user_attrs
        assert t.intermediate_values  # what the pruner was told
    spent = sum(fidelity_of(t) for t in study.trials)
    assert distinct_taken(study) == pytest.approx(spent) and 8 <= spent < 9
    assert len(history.records) + len(history.partial) > 8  # more architectures seen for the same cost
    assert {r.architecture.key() for r in history.partial}.isdisjoint({r.architecture.key() for r in history.records})
    assert all(r.fidelity < 1 for r in history.partial) and history.tried() >= {r.architecture.key() for r in history.partial}
    assert search.stats()["pruned"] == len(pruned)


@pytest.mark.filterwarnings("ignore:Heartbeat")
def test_resume_keeps_the_fidelity_accounting_exact(land, tmp_path):
    storage = make_storage(f"sqlite:///{tmp_path}/s.db")
    study, _, _ = _search(land, "median", 6, storage=storage, name="r")
    before = distinct_taken(study)
    killed = study.ask()  # a worker killed mid-trial: intermediate values, no result
    killed.report(0.9, 1)
    assert distinct_taken(study, before=killed.number + 1) == pytest.approx(before + 1)  # running: holds a slot
    study.tell(killed, state=TrialState.FAIL)  # what the heartbeat does to a dead worker's trial
    assert distinct_taken(study) == pytest.approx(before)
    study2, search2, history2 = _search(land, "median", 10, storage=storage, name="r")
    spent = sum(fidelity_of(t) for t in study2.trials)
    assert 10 <= spent < 11 and distinct_taken(study2) == pytest.approx(spent)
    keys = [r.architecture.key() for r in history2.records + history2.partial]
    assert len(keys) == len(set(keys))  # nothing evaluated twice across the two workers


@pytest.mark.parametrize("pruner", [p for p in PRUNERS if p != "none"])
def test_every_pruner_runs_a_replay(land, pruner):
    rp = Replay(land, budget=6, horizon=12, pruner=pruner)
    for strategy in ("tpe", "guided"):
        run = rp.run(strategy, 0)
        assert run.cost <= rp.horizon + 1 and run.pick in land
        assert run.cost_to_top is None or run.cost_to_top <= run.cost


def test_a_replay_without_a_pruner_is_todays_and_staging_without_pruning_changes_nothing(land, monkeypatch):
    rp = Replay(land, budget=6, horizon=14)
    plain = rp.run("tpe", 3)
    assert rp.pruner == "none" and plain.pruned == 0 and plain.cost == len(plain.keys)
    assert plain.cost_to_top == plain.trials_to_top or plain.trials_to_top is None
    monkeypatch.setattr(replay_mod, "make_pruner", lambda name, n=None: optuna.pruners.NopPruner())
    staged_run = rp.run("tpe+median", 3)  # looked up dialogue by dialogue, never stopped
    assert staged_run.keys == plain.keys and staged_run.pick == plain.pick
    assert staged_run.cost == plain.cost and staged_run.cost_to_top == plain.cost_to_top


def test_the_report_shows_evaluation_costs_and_their_ratio(land):
    report = Replay(land, budget=5, horizon=10).run_all(["tpe", "tpe+sha"], seeds=range(3))
    table = report.table()
    assert "evaluation cost to top, tpe+sha / tpe:" in table and "full-evaluation equivalents" in table
    assert set(report.cost_ratios()) == {"tpe+sha"}
    assert {r["strategy"] for r in report.to_dict()["runs"]} == {"tpe", "tpe+sha"}


def test_a_pruned_child_refutes_its_edit_in_the_ledger(land):
    study, _, history = _search(land, "sha", 12, strategy="guided", name="g")
    children = [r for r in history.partial if r.edit and history.by_key(r.parent) is not None]
    ledger = Ledger.from_history(history)
    for r in children:
        entry = next(e for e in ledger.entries if e.evidence.get("trial") == r.number)
        assert entry.evidence["partial"] == pytest.approx(r.fidelity, abs=1e-4)
        assert entry.status == REFUTED or entry.evidence["delta"] > 0
    assert children, "guided's pruned proposals have their parent in the history"
    rebuilt = History.from_study(study)  # from the study alone (another worker, a resume)
    assert [r.number for r in rebuilt.partial] == [r.number for r in history.partial]

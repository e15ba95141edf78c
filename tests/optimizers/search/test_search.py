"""The search: Optuna space from the registry, invalid tuples never evaluated, the guided strategy
(diagnosis, gradient, ledger, LM proposer with fallback), compile(), MLflow and compare.
Runs on the fake AutoMem registry and the synthetic objective of search_helpers."""
from __future__ import annotations

import logging

import dspy
import optuna
import pytest

from search_helpers import SyntheticMetric

from memarch.optimizers.comparison import compare, trials_to_target
from memarch.optimizers.compile import MemarchOptimizer
from memarch.optimizers.search.champion import select_champion
from memarch.optimizers.samplers.guided.ledger import REFUTED, Ledger
from memarch.optimizers.samplers.guided.planner import RoundPlanner
from memarch.optimizers.samplers.guided.sampler import GuidedSampler
from memarch.optimizers.search.history import History, TrialRecord
from memarch.pipeline.presets import get_preset, presets_for
from memarch.optimizers.search.runner import Search
from memarch.optimizers.search.param_space import ParamSpace
from memarch.optimizers.samplers.strategies import make_sampler
from memarch.optimizers.search.study import make_storage, open_study
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.program import MemoryProgram
from memarch.pipeline.space import ArchitectureSpace

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _run(strategy, space, metric, budget, name="s", seed=0):
    """``strategy``: a strategy name or a sampler."""
    ss = ParamSpace(space)
    sampler = make_sampler(strategy, ss, seed=seed) if isinstance(strategy, str) else strategy
    study = open_study(name, make_storage(None), sampler, space=ss.describe())
    search = Search(metric, ss, budget=budget)
    return search, study, search.run(study)


def test_space_is_derived_from_registry_and_round_trips(space):
    assert ArchitectureSpace("experience").count_valid() == 2573
    ss = ParamSpace(space)
    d = ss.distributions()
    assert [k for k in d if k.startswith("encode:")] == [f"encode:{e}" for e in space.encoders]
    assert d["store"].choices == tuple(space.stores) and "llm_graph" not in d["store"].choices
    arch = Architecture(("workflow", "tip"), "graph", "graph", "graph_consolidate")
    assert ss.from_params(ss.to_params(arch)) == arch.canonical()
    with pytest.raises(ValueError):
        ss.to_params(Architecture(("tip",), "llm_graph", "graph", "lightweight"))  # needs an LM


def test_invalid_draws_are_pruned_and_never_evaluated(space, caplog):
    metric = SyntheticMetric(n_queries=30)
    with caplog.at_level(logging.INFO, logger="memarch.optimizers.search.trial_function"):
        search, study, history = _run("random", space, metric, budget=15)
    states = [t.state for t in study.trials]
    assert states.count(optuna.trial.TrialState.COMPLETE) == 15 and len(history) == 15
    assert search.invalid, "the random sampler draws invalid tuples in this space"
    assert all(space.is_valid(Architecture.from_dict(t.user_attrs["architecture"])) for t in study.trials
               if t.state == optuna.trial.TrialState.COMPLETE)
    invalid_keys = {k for _, k, _ in search.invalid}
    assert not invalid_keys & set(metric.calls)
    assert any("invalid" in r.message and "pruned" in r.message for r in caplog.records)


class _BadProposer(optuna.samplers.RandomSampler):
    """Proposes an invalid architecture first, then a valid one, then draws at random."""

    def __init__(self, ss):
        super().__init__(seed=1)
        self.ss = ss
        self.queue = [Architecture(("tip",), "json", "graph", "lightweight"),
                      Architecture(("tip",), "json", "hybrid", "lightweight")]

    def infer_relative_search_space(self, study, trial):
        return self.ss.distributions()

    def sample_relative(self, study, trial, search_space):
        return self.ss.to_params(self.queue.pop(0)) if self.queue else {}


def test_invalid_proposal_is_never_evaluated(space):
    metric = SyntheticMetric(n_queries=20)
    search, _, _ = _run(_BadProposer(ParamSpace(space)), space, metric, budget=4)
    assert search.invalid and search.invalid[0][1] == "tip|json|graph|lightweight"
    assert "tip|json|graph|lightweight" not in metric.calls
    assert "tip|json|hybrid|lightweight" in metric.calls
    assert all(space.is_valid(Architecture(tuple(k.split("|")[0].split("+")), *k.split("|")[1:]))
               for k in metric.calls)


def test_guided_diagnoses_and_keeps_a_ledger(space):
    metric = SyntheticMetric()
    sampler = GuidedSampler(space, seed=0, k=3)
    _, study, history = _run(sampler, space, metric, budget=24)
    art = sampler.rounds[-1]
    g = art["gradient"]
    assert set(g) == {"primary_signal", "confidence", "recommended_action", "evidence_ids", "reasoning"}
    assert g["primary_signal"] in ("encode", "store", "retrieve", "manage") and g["evidence_ids"]
    assert sum(art["diagnosis"]["histogram"].values()) > 0 and art["pareto_front"]
    ledger = Ledger.from_history(history)
    assert {e.status for e in ledger.entries} <= {"active", "pending", "refuted", "inert"} and ledger.entries
    # dead ends are never proposed again: a refuted edit appears once per condition
    seen = [(e.condition, e.edit) for e in ledger.entries]
    assert len(seen) == len(set(seen))
    refuted = {e.edit: e.evidence["trial"] for e in ledger.entries if e.status == REFUTED}
    for r in history.records:
        if r.edit in refuted:
            assert r.number <= refuted[r.edit]
    assert len(history.tried()) == len(history)  # guided never re-evaluates an architecture


def test_guided_reaches_the_optimum_before_random(space):
    metric = SyntheticMetric()
    optimum = max(metric(a, "search").score for a in space.enumerate())
    hits = {}
    for name in ("guided", "random"):
        _, _, h = _run(name, space, metric, budget=40, name=name)
        hits[name] = trials_to_target(h.best_so_far(), 0.99 * optimum) or 41
    assert hits["guided"] < hits["random"], hits


def test_champion_changes_only_on_a_significant_win(space):
    metric = SyntheticMetric(n_queries=60)
    a = Architecture(("tip",), "json", "hybrid", "lightweight")
    b = Architecture(("tip", "trajectory", "workflow"), "hybrid", "contrastive", "json_full")
    ss = ParamSpace(space)
    study = open_study("c", make_storage(None), optuna.samplers.RandomSampler(0), space=ss.describe())
    for arch in (a, b):
        study.enqueue_trial(ss.to_params(arch))
    Search(metric, ss, budget=2).run(study)
    h = History.from_study(study)
    assert select_champion(h).architecture.key() == b.key()  # a clear win
    # The same objective gap without a paired win pattern: a one-query edge is not significant.
    rec_a, rec_b = h.records
    outcomes = list(rec_a.result.outcomes)
    outcomes[0] = type(outcomes[0])("search-0", 1.0, True)
    edged = TrialRecord(rec_b.number, rec_b.architecture, rec_a.score + 1e-3, rec_b.cost,
                        type(rec_b.result)(rec_b.architecture, "synthetic", "search", rec_a.score + 1e-3,
                                           outcomes=outcomes))
    assert select_champion(History([rec_a, edged])).architecture.key() == a.key()


def _lm_answers(good: bool):
    if not good:
        return dspy.utils.DummyLM([{"gradient": "no idea"}] * 2 + [{"proposals": "garbage"}] * 2)
    grad = {"primary_signal": "retrieve", "confidence": "high", "recommended_action": "x",
            "evidence_ids": ["search-1"], "reasoning": "misses"}
    props = [{"encode": ["tip", "workflow"], "store": "graph", "retrieve": "graph", "manage": "lightweight",
              "edit": "", "rationale": "graph recall"},
             {"encode": ["tip"], "store": "json", "retrieve": "graph", "manage": "lightweight",  # invalid
              "edit": "", "rationale": "bad"}]
    return dspy.utils.DummyLM([{"gradient": grad}, {"proposals": props}], adapter=dspy.JSONAdapter())


def _one_round_history(space):
    metric = SyntheticMetric(n_queries=30)
    _, study, history = _run("random", space, metric, budget=3, seed=3)
    return history


def test_malformed_lm_answer_ends_in_logged_fallback(space, caplog):
    history = _one_round_history(space)
    planner = RoundPlanner(meta_lm=_lm_answers(good=False))
    with caplog.at_level(logging.WARNING):
        proposals = planner.plan(history, space, k=3)
    assert len(proposals) == 3 and {p.role for p in proposals} <= {"exploit", "explore"}
    assert all(space.is_valid(p.architecture) for p in proposals)
    msgs = " ".join(r.message for r in caplog.records)
    assert "proposer LM failed twice" in msgs and "diagnoser LM failed twice" in msgs


def test_lm_proposals_are_validated_repaired_and_completed(space):
    history = _one_round_history(space)
    planner = RoundPlanner(meta_lm=_lm_answers(good=True))
    proposals = planner.plan(history, space, k=3)
    assert proposals[0].role == "lm" and proposals[0].architecture.key() == "tip+workflow|graph|graph|lightweight"
    assert planner.artifacts()["gradient"]["primary_signal"] == "retrieve"
    assert all(space.is_valid(p.architecture) for p in proposals) and len(proposals) == 3
    assert len({p.architecture.key() for p in proposals}) == 3


def test_compile_returns_a_program_that_reloads_and_scores_the_same(space, tmp_path, hash_resources):
    metric = SyntheticMetric(n_queries=60)
    opt = MemarchOptimizer(metric, strategy="guided", budget=12, seed=0, save_path=tmp_path / "prog.json",
                           resources=hash_resources)
    program = opt.compile(space, trainset="search", valset="validation")
    rep = opt.report
    assert isinstance(program, MemoryProgram) and rep.trials == 12
    assert rep.architecture.key() in rep.finalists and rep.validation_score == max(rep.finalists.values())
    again = MemoryProgram.load(tmp_path / "prog.json", resources=hash_resources)
    assert again.architecture == program.architecture
    assert metric(again.architecture, "test").score == rep.test_score


def test_mlflow_holds_one_parent_and_nested_trial_runs(space, tmp_path):
    from memarch.optimizers.tracking.tracker import Tracker

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    tracker = Tracker(uri, artifact_root=tmp_path / "artifacts")
    opt = MemarchOptimizer(SyntheticMetric(n_queries=20), strategy="guided", budget=5, tracker=tracker)
    opt.compile(space)
    runs = tracker.client.search_runs([tracker.experiment_id], max_results=100)
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == tracker.parent_run_id]
    assert len(parents) == 1 and len(children) == 5
    child = children[0]
    assert {"encode", "store", "retrieve", "manage"} <= set(child.data.params)
    assert {"objective", "objective_quality", "latency_s", "cost_tokens", "category_0"} <= set(child.data.metrics)
    names = {a.path for a in tracker.client.list_artifacts(child.info.run_id)}
    assert {"architecture.json", "diagnosis.json"} <= names
    assert any({"gradient.json", "ledger.json"} <= {a.path for a in tracker.client.list_artifacts(c.info.run_id)}
               for c in children)
    parent_files = {a.path for a in tracker.client.list_artifacts(tracker.parent_run_id)}
    assert {"curve.png", "summary.json", "ledger.json", "rounds"} <= parent_files


def test_compare_reports_table_png_and_baselines(space, tmp_path):
    cmp = compare(SyntheticMetric(n_queries=30), space, ["guided", "random"], seeds=2, budget=6)
    text = cmp.table()
    assert "guided" in text and "random" in text and "best preset" in text and "no memory" in text
    assert len(cmp.runs["guided"]) == 2 and all(len(r.curve) == 6 for r in cmp.runs["random"])
    png = cmp.plot(tmp_path / "c.png")
    assert png.stat().st_size > 1000


def test_presets_map_to_the_space(space):
    valid = presets_for(space)
    assert "mem0" in valid and "zep" not in valid  # zep needs llm_graph (an LM)
    assert get_preset("mem0", ArchitectureSpace("experience")).key() == "tip|vector|hybrid|json_full"


def test_bruteforce_enumerates_the_valid_space_once(space):
    metric = SyntheticMetric(n_queries=10)
    search, study, history = _run("bruteforce", space, metric, budget=30)
    assert len(history.tried()) == 30 == len(metric.calls) and not search.invalid


def test_edits_that_change_no_outcome_are_inert_dead_ends(space):
    from memarch.optimizers.samplers.guided.ledger import INERT
    from memarch.pipeline.trial import QueryOutcome, TrialResult

    def rec(n, arch, scores, edit="", parent=""):
        outs = [QueryOutcome(f"q{i}", s, s >= 0.5) for i, s in enumerate(scores)]
        res = TrialResult(arch, "synthetic", "search", sum(scores) / len(scores), outcomes=outs)
        return TrialRecord(n, arch, res.score, 0.0, res, edit=edit, parent=parent)

    base = Architecture(("tip",), "json", "hybrid", "lightweight")
    same = [1.0, 0.0, 1.0, 0.0]
    h = History([rec(0, base, same),
                 rec(1, base.replace(store="vector"), same, "store: json -> vector", base.key()),
                 rec(2, base.replace(store="hybrid"), same, "store: json -> hybrid", base.key()),
                 rec(3, base.replace(manage="json_full"), same, "manage: lightweight -> json_full", base.key()),
                 rec(4, base.replace(retrieve="mmr"), [1.0, 1.0, 1.0, 0.0], "retrieve: hybrid -> mmr", base.key())])
    ledger = Ledger.from_history(h)
    assert [e.status for e in ledger.entries] == [INERT, INERT, INERT, "pending"]
    assert "store: json -> vector" in ledger.dead_ends() and "retrieve: hybrid -> mmr" not in ledger.dead_ends()
    assert ledger.inert_fields() == {"store"}  # two inert store edits; one manager edit is not enough
    assert ledger.moved_fields() == {"retrieve"}  # the one edit that changed an outcome


def test_multi_module_edits_name_every_module_and_skip_inert_ones(space):
    from memarch.optimizers.samplers.guided.edits import Edit
    from memarch.optimizers.samplers.guided.proposer import AttributionProposer

    base = Architecture(("tip",), "json", "hybrid", "lightweight")
    e = Edit("retrieve", "hybrid", "graph", base, 1.0, extra="store: json -> graph")
    assert e.text == "retrieve: hybrid -> graph; store: json -> graph" and e.fields == {"retrieve", "store"}
    # a planned round edits the leader and never an inert module (store, shown inert twice)
    from memarch.pipeline.trial import QueryOutcome, TrialResult

    def rec(n, arch, scores, edit="", parent=""):
        outs = [QueryOutcome(f"q{i}", s, s >= 0.5, attribution="retrieve" if s < 0.5 else None) for i, s in enumerate(scores)]
        res = TrialResult(arch, "synthetic", "search", sum(scores) / len(scores), outcomes=outs)
        return TrialRecord(n, arch, res.score, 0.0, res, edit=edit, parent=parent)

    same = [1.0, 0.0, 1.0, 0.0]
    best = base.replace(retrieve="mmr")
    h = History([rec(0, base, same),
                 rec(1, base.replace(store="vector"), same, "store: json -> vector", base.key()),
                 rec(2, base.replace(store="hybrid"), same, "store: json -> hybrid", base.key()),
                 rec(3, best, [1.0, 1.0, 1.0, 0.0], "retrieve: hybrid -> mmr", base.key())])
    planner = RoundPlanner(k=3)
    props = planner.plan(h, space, k=3)
    art = planner.artifacts()
    assert props and art["leader"] == best.key() and art["inert_modules"] == ["store"]
    for p in props:
        if p.role == "exploit":
            assert p.architecture.store == best.store, p.edit


def test_explore_ablates_one_encoder_of_the_leader(space):
    """Under a context budget one encoder's items can crowd out another's answers, so exploring
    includes leave-one-out ablations of the leader's encoders, not only additions."""
    from memarch.pipeline.trial import QueryOutcome, TrialResult

    def rec(n, arch, scores):
        outs = [QueryOutcome(f"q{i}", s, s >= 0.5, attribution="retrieve" if s < 0.5 else None)
                for i, s in enumerate(scores)]
        res = TrialResult(arch, "synthetic", "search", sum(scores) / len(scores), outcomes=outs)
        return TrialRecord(n, arch, res.score, 0.0, res)

    leader = Architecture(("tip", "trajectory"), "json", "hybrid", "lightweight")
    h = History([rec(0, leader, [1.0, 1.0, 0.0, 0.0]),
                 rec(1, leader.replace(retrieve="mmr"), [1.0, 0.0, 0.0, 0.0])])
    props = RoundPlanner(k=30).plan(h, space, k=30)  # a round wide enough to reach every explore tier
    ablations = [p for p in props if p.role == "explore" and set(p.architecture.encode) < set(leader.encode)]
    assert ablations, [p.edit for p in props]


class _FailingTest(SyntheticMetric):
    """The synthetic objective whose test evaluations fail (the first ``fail`` of them; None: all)."""

    def __init__(self, fail: int | None = None, **kw):
        super().__init__(**kw)
        self.fail, self.test_calls = fail, 0

    def __call__(self, arch, data="search"):
        if data == "test":
            self.test_calls += 1
            if self.fail is None or self.test_calls <= self.fail:
                from memarch.pipeline.trial import TrialResult

                return TrialResult(arch, "synthetic", "test", 0.0, failed=True, error="RuntimeError: test exploded")
        return super().__call__(arch, data)


def test_a_failed_test_evaluation_is_none_and_counted_not_zero(space, tmp_path):
    from memarch.optimizers.tracking.tracker import Tracker

    tracker = Tracker(f"sqlite:///{tmp_path}/mlflow.db", artifact_root=tmp_path / "artifacts")
    opt = MemarchOptimizer(_FailingTest(n_queries=20), strategy="random", budget=4, tracker=tracker,
                           log_model=False)
    opt.compile(space)
    rep = opt.report
    assert rep.test_score is None and rep.counts["test_failed"] == 1 and "test exploded" in rep.test_error
    assert rep.to_dict()["test_score"] is None and "test exploded" in rep.to_dict()["test_error"]
    parent = tracker.client.get_run(tracker.parent_run_id).data
    assert "test_score" not in parent.metrics  # no fake 0.0 in MLflow
    assert parent.metrics["test_failed"] == 1 and "test exploded" in parent.tags["memarch.test_failed"]


def test_compare_medians_are_over_the_runs_whose_test_succeeded(space):
    cmp = compare(_FailingTest(fail=1, n_queries=20), space, ["random"], seeds=3, budget=3, baselines=False)
    row = cmp.rows()[0]
    tests = [r.test_score for r in cmp.runs["random"]]
    assert tests[0] is None and None not in tests[1:]
    assert (row["test_runs"], row["test_failed"]) == (2, 1)
    assert row["test_median"] == pytest.approx(sorted(tests[1:])[0] / 2 + sorted(tests[1:])[1] / 2)
    table = cmp.table()
    assert "random test: median over 2 of 3 seeds; 1 failed" in table
    assert "1 failed test evaluations of the pick" in table  # the count, in words


def test_a_dropped_proposal_is_in_the_end_of_run_counts_and_warned(space, caplog):
    warm = [Architecture(("tip",), "json", "hybrid", "lightweight"),
            Architecture(("workflow",), "vector", "mmr", "json_full"),
            Architecture(("trajectory",), "hybrid", "contrastive", "lightweight")]
    grad = {"primary_signal": "retrieve", "confidence": "high", "recommended_action": "x",
            "evidence_ids": ["search-1"], "reasoning": "misses"}
    again = {"encode": ["tip"], "store": "json", "retrieve": "hybrid", "manage": "lightweight",  # evaluated
             "edit": "", "rationale": "again"}
    lm = dspy.utils.DummyLM([{"gradient": grad}, {"proposals": [again]}] * 3, adapter=dspy.JSONAdapter())
    opt = MemarchOptimizer(SyntheticMetric(n_queries=20), strategy="guided", budget=5, meta_lm=lm, warm_start=warm)
    with caplog.at_level(logging.WARNING, logger="memarch.optimizers.compile.report"):
        opt.compile(space)
    counts = opt.report.counts
    assert counts["dropped_proposals"] >= 1 and counts["proposer_lm_fallbacks"] == 0
    summary = [r.getMessage() for r in caplog.records if "dropped_proposals" in r.getMessage()]
    assert len(summary) == 1 and f"dropped_proposals {counts['dropped_proposals']}" in summary[0]

"""`GuidedSampler` inside a user's plain Optuna code: the objective contract (`record_result`,
`record_outcomes`), whole-architecture proposals that never repeat what the study holds, dropped
proposals counted, the independent sampler as the fallback."""
from __future__ import annotations

import optuna
import pytest

from search_helpers import SyntheticMetric

import memarch
from memarch.optimizers.search.history import History
from memarch.pipeline.architecture import Architecture

optuna.logging.set_verbosity(optuna.logging.WARNING)


@pytest.fixture
def space(space):
    """Here `space` is the Optuna-facing `memarch.ParamSpace` of the shared `space` fixture (tests/conftest.py)."""
    return memarch.ParamSpace(space)


def _objective(space, metric, evaluated):
    def objective(trial):
        arch = space.suggest(trial)
        if not space.is_valid(arch):
            raise optuna.TrialPruned("invalid")
        evaluated.append(arch.canonical().key())
        return memarch.record_result(trial, arch, metric(arch, "search"))
    return objective


def test_guided_sampler_in_plain_optuna_code(space):
    metric, evaluated = SyntheticMetric(n_queries=60), []
    sampler = memarch.GuidedSampler(space, seed=0, k=3)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    study.optimize(_objective(space, metric, evaluated), n_trials=30)
    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(complete) >= 25
    # after the random round 0 (k trials), proposals come from diagnosis rounds
    assert sampler.rounds and sampler.fallback_trials >= 3
    roles = [t.system_attrs.get("memarch:role") for t in complete[3:]]
    assert sum(r in ("exploit", "explore") for r in roles) >= 15, roles
    assert len(set(evaluated)) == len(evaluated), "the guided sampler proposed an evaluated architecture"
    history = History.from_study(study)
    assert history.records[0].role == "" and any(r.edit for r in history.records)
    # and it beats the same budget of random draws on this objective
    rnd, rnd_eval = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(0)), []
    rnd.optimize(_objective(space, metric, rnd_eval), n_trials=30)
    assert study.best_value > rnd.best_value


def test_record_outcomes_without_a_trial_result(space):
    arch = Architecture(("tip",), "json", "hybrid", "lightweight")
    study = optuna.create_study(direction="maximize", sampler=memarch.GuidedSampler(space, seed=0, min_history=1))

    def objective(trial):
        a = space.suggest(trial)
        if not space.is_valid(a):
            raise optuna.TrialPruned()
        outcomes = [{"query_id": f"q{i}", "score": float(i % 2), "module": "retrieve" if i % 2 == 0 else None}
                    for i in range(10)]
        return memarch.record_outcomes(trial, a, outcomes)

    study.enqueue_trial(space.to_params(arch))
    study.optimize(objective, n_trials=4)
    rec = History.from_study(study).records[0]
    assert rec.score == 0.5 and rec.result.attribution == {"retrieve": 5}
    assert [t.system_attrs.get("memarch:role") for t in study.trials[1:]].count(None) == 0  # all guided


def test_proposals_already_held_are_dropped_and_counted(space):
    metric = SyntheticMetric(n_queries=40)
    sampler = memarch.GuidedSampler(space, seed=0, k=3, min_history=1)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    first = Architecture(("tip",), "json", "hybrid", "lightweight")
    study.enqueue_trial(space.to_params(first))
    study.optimize(_objective(space, metric, []), n_trials=1)
    # Plan a round, then let "another worker" queue the first proposal before this worker uses it.
    trial = study.ask()
    params = {n: trial.suggest_categorical(n, d.choices) for n, d in space.distributions().items()}
    proposed = space.from_params(params).canonical()
    study.tell(trial, state=optuna.trial.TrialState.FAIL)
    queued_next = sampler._queue[0].architecture
    study.enqueue_trial(space.to_params(queued_next))  # held by the study now
    study.optimize(_objective(space, metric, []), n_trials=2)
    assert any(d["architecture"] == queued_next.key() for d in sampler.dropped)
    assert sampler.stats()["dropped_proposals"] >= 1
    assert proposed.key() != first.key()


def test_empty_history_defers_to_the_independent_sampler(space):
    sampler = memarch.GuidedSampler(space, seed=0, k=3, independent_sampler=optuna.samplers.RandomSampler(1))
    study = optuna.create_study(direction="maximize", sampler=sampler)
    study.optimize(_objective(space, SyntheticMetric(n_queries=10), []), n_trials=2)
    assert sampler.fallback_trials == 2 and not sampler.rounds


def test_trials_without_recorded_outcomes_are_warned_once_and_minimising_is_refused(space, caplog):
    from memarch.errors import MemarchError

    def plain(trial):  # returns a number, never calls record_result: nothing to diagnose
        arch = space.suggest(trial)
        if not space.is_valid(arch):
            raise optuna.TrialPruned()
        return SyntheticMetric(n_queries=10)(arch, "search").score

    sampler = memarch.GuidedSampler(space, seed=0, k=2)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    with caplog.at_level("WARNING", logger="memarch.optimizers.samplers.guided.sampler"):
        study.optimize(plain, n_trials=6)
    warned = [r for r in caplog.records if "carry no recorded outcomes" in r.getMessage()]
    assert len(warned) == 1 and "record_result" in warned[0].getMessage()  # once per sampler, not per trial
    complete = len([t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE])
    assert sampler.stats()["unrecorded_trials"] >= complete - 1 >= 1 and not sampler.rounds

    minimising = optuna.create_study(direction="minimize", sampler=memarch.GuidedSampler(space, seed=0))
    with pytest.raises(MemarchError, match="maximising study"):
        minimising.optimize(plain, n_trials=1)


def test_a_retry_that_succeeds_counts_no_lm_fallback(space):
    import dspy

    grad = {"primary_signal": "retrieve", "confidence": "high", "recommended_action": "x",
            "evidence_ids": ["search-1"], "reasoning": "misses"}
    props = [{"encode": ["tip", "workflow"], "store": "graph", "retrieve": "graph", "manage": "lightweight",
              "edit": "", "rationale": "graph recall"}]
    # diagnoser and proposer: an unusable first answer each, then a good one on the corrective retry
    lm = dspy.utils.DummyLM([{"gradient": "no idea"}, {"gradient": grad}, {"proposals": "garbage"},
                             {"proposals": props}], adapter=dspy.JSONAdapter())
    sampler = memarch.GuidedSampler(space, seed=0, k=1, min_history=1, meta_lm=lm)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    study.enqueue_trial(space.to_params(Architecture(("tip",), "json", "hybrid", "lightweight")))
    study.optimize(_objective(space, SyntheticMetric(n_queries=20), []), n_trials=2)
    assert study.trials[1].system_attrs.get("memarch:role") == "lm"  # the retried LM answer was used
    assert sampler.rounds[0]["lm_fallbacks"] == {"diagnoser": 0, "proposer": 0}
    stats = sampler.stats()
    assert stats["diagnoser_lm_fallbacks"] == stats["proposer_lm_fallbacks"] == 0
    assert sampler.planner.diagnoser.lm_requests == 1 and sampler.planner.proposer.lm_requests == 1
    assert sampler.planner.diagnoser.fallbacks == sampler.planner.proposer.fallbacks == 0


def test_trials_a_pruner_stopped_count_towards_the_first_round(space):
    """Warm-start trials a pruner stopped are evaluated architectures: with one complete and two
    stopped (k 3) the next trial is a guided round's, not the independent sampler's. Without a
    complete one there is nothing to edit, and the independent sampler draws."""
    metric = SyntheticMetric(n_queries=40)

    def objective(trial):
        arch = space.suggest(trial)
        if not space.is_valid(arch):
            raise optuna.TrialPruned("invalid")
        value = memarch.record_result(trial, arch, metric(arch, "search"))
        if trial.number in stopped:
            trial.set_user_attr("fidelity", 0.2)
            raise optuna.TrialPruned("stopped at the first rung")
        return value

    for stopped, guided in (({1, 2}, True), ({0, 1, 2}, False)):
        sampler = memarch.GuidedSampler(space, seed=0, k=3)
        study = optuna.create_study(direction="maximize", sampler=sampler)
        for arch in (Architecture(("tip",), "json", "hybrid", "lightweight"),
                     Architecture(("insight",), "json", "hybrid", "lightweight"),
                     Architecture(("tip", "insight"), "json", "hybrid", "lightweight")):
            study.enqueue_trial(space.to_params(arch))
        study.optimize(objective, n_trials=4)
        assert len(History.from_study(study).partial) == len(stopped)
        assert (study.trials[3].system_attrs.get("memarch:role") is not None) is guided, stopped
        assert bool(sampler.rounds) is guided

"""The private Optuna API memarch relies on, in one adapter (memarch/optimizers/search/optuna_internals.py).
These tests fail loudly when an Optuna upgrade moves any of it: fix the adapter, nothing else."""
from __future__ import annotations

import optuna

from memarch.optimizers.search import optuna_internals as internals


def test_optuna_major_version_is_the_one_the_adapter_was_written_for():
    major = int(optuna.__version__.split(".")[0])
    assert major == 5, f"optuna {optuna.__version__}: re-check memarch/optimizers/search/optuna_internals.py"


def test_a_sampler_can_annotate_the_trial_it_samples():
    seen = {}

    class Annotating(optuna.samplers.RandomSampler):
        def infer_relative_search_space(self, study, trial):
            return {"x": optuna.distributions.CategoricalDistribution(("a", "b"))}

        def sample_relative(self, study, trial, search_space):
            internals.set_trial_system_attr(study, trial, "memarch:role", "exploit")
            seen["id"] = internals.trial_id(trial)
            return {"x": "b"}

    study = optuna.create_study(sampler=Annotating(seed=0))
    study.optimize(lambda t: float(t.suggest_categorical("x", ("a", "b")) == "b"), n_trials=1)
    t = study.trials[0]
    assert t.params["x"] == "b" and t.system_attrs["memarch:role"] == "exploit"
    assert internals.storage_of(study).get_trial(seen["id"]).number == 0


def test_heartbeat_rows_are_readable_from_an_rdb_storage(tmp_path):
    from memarch.optimizers.search.study import make_storage

    storage = make_storage(f"sqlite:///{tmp_path}/o.db", heartbeat_interval=1, grace_period=2)
    study = optuna.create_study(storage=storage)
    backend = internals.rdb_backend(study)
    assert backend is not None and backend.heartbeat_interval == 1
    trial = study.ask()
    storage.record_heartbeat(trial._trial_id)
    assert internals.heartbeat_trial_ids(backend, [trial._trial_id]) == {trial._trial_id}
    assert internals.rdb_backend(optuna.create_study()) is None  # in-memory: no heartbeat table


def test_a_schema_created_by_another_process_meanwhile_is_retried(tmp_path, monkeypatch):
    """Two processes opening a new SQLite study file at once: the loser of the schema race sees
    "table studies already exists" (seen in a test that polled a compile's study file); it retries
    instead of exiting."""
    import memarch.optimizers.search.study as study_module
    from sqlalchemy.exc import OperationalError

    real, calls = study_module.RDBStorage, []

    def racing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise OperationalError("CREATE TABLE studies", {}, Exception("table studies already exists"))
        return real(*args, **kwargs)

    monkeypatch.setattr(study_module, "RDBStorage", racing)
    monkeypatch.setattr("time.sleep", lambda s: None)
    storage = study_module.make_storage(f"sqlite:///{tmp_path}/o.db")
    assert len(calls) == 2 and storage.get_all_studies() == []

"""Two processes opening one new MLflow SQLite store at once: the loser of the schema migration race
("duplicate column name: step", "table ... already exists" — seen with two compiles started together)
waits and retries instead of exiting; any other error is still one clear line."""
from __future__ import annotations

import pytest

from memarch.errors import MemarchError
from memarch.optimizers.tracking import tracker as tracker_module


class _Client:
    def __init__(self, failures: list[str]):
        self.failures, self.calls = failures, 0

    def get_experiment_by_name(self, name):
        self.calls += 1
        if self.failures:
            raise RuntimeError(self.failures.pop(0))
        return None


def test_the_migration_race_is_retried(monkeypatch):
    monkeypatch.setattr("time.sleep", lambda s: None)
    client = _Client(["(sqlite3.OperationalError) duplicate column name: step",
                      "(sqlite3.OperationalError) table experiments already exists"])
    assert tracker_module._experiment_by_name(client, "memarch") is None and client.calls == 3


def test_other_errors_are_not_retried(monkeypatch):
    monkeypatch.setattr("time.sleep", lambda s: None)
    client = _Client(["unable to open database file"])
    with pytest.raises(RuntimeError):
        tracker_module._experiment_by_name(client, "memarch")
    assert client.calls == 1


def test_a_tracker_opens_a_store_another_process_is_migrating(tmp_path, monkeypatch):
    """The real store: the first attempt fails as the race does, the retry opens the store."""
    from mlflow.tracking import MlflowClient

    real = MlflowClient.get_experiment_by_name
    state = {"n": 0}

    def racing(self, name):
        state["n"] += 1
        if state["n"] == 1:
            raise RuntimeError("(sqlite3.OperationalError) duplicate column name: step")
        return real(self, name)

    monkeypatch.setattr(MlflowClient, "get_experiment_by_name", racing)
    monkeypatch.setattr("time.sleep", lambda s: None)
    t = tracker_module.Tracker(f"sqlite:///{tmp_path}/mlflow.db", artifact_root=tmp_path / "artifacts")
    assert t.experiment_id and state["n"] >= 2
    with pytest.raises(MemarchError):
        tracker_module.Tracker(f"sqlite:///{tmp_path}/no/such/../../x\x00.db", artifact_root=tmp_path / "a")

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


def _open_store(path: str, barrier, results) -> None:
    barrier.wait()  # every process asks the new store for its experiment at the same moment
    try:
        tracker_module.Tracker(f"sqlite:///{path}", artifact_root=str(path) + ".artifacts")
        results.put("ok")
    except Exception as exc:  # the MemarchError line of a half-migrated store
        results.put(f"{type(exc).__name__}: {exc}")


def test_processes_opening_one_new_store_at_once_all_open_it(tmp_path):
    """The real race, without mocks: three processes start a Tracker on one new SQLite store together.
    Before `store_lock`, 4 of 4 such starts left the store half-migrated and every later open failed
    ("duplicate column name: step", "table runs already exists")."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    path = tmp_path / "mlflow.db"
    barrier, results = ctx.Barrier(3), ctx.Queue()
    procs = [ctx.Process(target=_open_store, args=(str(path), barrier, results)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=240)
    assert [results.get(timeout=5) for _ in procs] == ["ok"] * 3
    # and the store serves the next process too
    assert tracker_module.Tracker(f"sqlite:///{path}", artifact_root=tmp_path / "a").experiment_id

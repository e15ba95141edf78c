"""`memarch ui` without a browser: the runs view and URLs, the experiment's kind tag, the server
process (a stand-in HTTP server) with job workers off by default, and one-line errors."""
from __future__ import annotations

import json
import sys

import pytest

from memarch.cli import main
from memarch.errors import MemarchError
from memarch.optimizers.tracking import ui_view
from memarch.optimizers.tracking.ui_view import KIND_TAG, MACHINE_LEARNING, SHARED_VIEW_PREFIX, VIEW_KEY


def test_runs_columns_put_objective_first_and_keep_only_logged_keys():
    cols = ui_view.runs_columns({"objective", "objective_read_p95", "objective_quality", "cost_wall_s",
                                 "score_answer_span", "test_score"}, {"encode", "store", "edit"})
    assert cols == ["metrics.`objective`", "metrics.`objective_quality`", "metrics.`objective_read_p95`",
                    "metrics.`cost_wall_s`", "metrics.`test_score`", "params.`encode`", "params.`store`"]
    state = ui_view.view_state({"objective"}, ())
    assert state["orderByKey"] == "metrics.`objective`" and state["orderByAsc"] is False
    assert state["columnOrder"][:4] == [*ui_view.LEADING, "metrics.`objective`"]


def test_urls_open_the_ml_layout_runs_table_and_an_artifact():
    url = ui_view.runs_url("http://127.0.0.1:5000/", "3")
    assert url == ("http://127.0.0.1:5000/#/experiments/3/runs?workflowType=machine_learning"
                   f"&viewStateShareKey={VIEW_KEY}")
    assert "viewStateShareKey" not in ui_view.runs_url("http://h:1", "3", key=None)
    assert ui_view.artifact_url("http://h:1", "3", "abc", "diagnosis.json") == \
        "http://h:1/#/experiments/3/runs/abc/artifacts/diagnosis.json?workflowType=machine_learning"


class _Client:
    def __init__(self, fail=False):
        self.tags, self.fail = {}, fail

    def set_experiment_tag(self, exp_id, key, value):
        if self.fail:
            raise RuntimeError("database is locked")
        self.tags[key] = value


def test_mark_experiment_skips_when_tagged_and_logs_a_failure(caplog):
    client = _Client()
    assert ui_view.mark_experiment(client, "1", {KIND_TAG: MACHINE_LEARNING}) and client.tags == {}
    assert ui_view.mark_experiment(client, "1") and client.tags == {KIND_TAG: MACHINE_LEARNING}
    assert not ui_view.mark_experiment(_Client(fail=True), "1")
    assert "database is locked" in caplog.text


def test_tracker_marks_experiment_and_ui_writes_the_view(tmp_path, capsys):
    from memarch.optimizers.tracking.tracker import Tracker

    uri = f"file://{tmp_path}/mlruns"  # a file store: no database to create
    tracker = Tracker(uri, artifact_root=tmp_path / "artifacts")
    exp = tracker.client.get_experiment(tracker.experiment_id)
    assert exp.tags[KIND_TAG] == MACHINE_LEARNING
    run = tracker.client.create_run(tracker.experiment_id)
    tracker.client.log_metric(run.info.run_id, "objective", 0.5)
    tracker.client.log_metric(run.info.run_id, "cost_memory_words", 12)
    tracker.client.log_param(run.info.run_id, "store", "vector")
    assert main(["ui", "--tracking-uri", uri, "--port", "0", "--print-only"]) == 0
    out = capsys.readouterr().out
    assert f"/#/experiments/{tracker.experiment_id}/runs?workflowType=machine_learning" in out
    assert "job workers off" in out and "--workers 1" in out
    view = json.loads(tracker.client.get_experiment(tracker.experiment_id).tags[SHARED_VIEW_PREFIX + VIEW_KEY])
    assert view["selectedColumns"] == ["metrics.`objective`", "metrics.`cost_memory_words`", "params.`store`"]
    assert main(["ui", "--tracking-uri", uri, "--experiment", "nope", "--print-only"]) == 0
    assert "no experiment 'nope'" in capsys.readouterr().out


def test_server_answers_then_stops_and_jobs_are_off_unless_asked(monkeypatch, tmp_path):
    from memarch.cli import _ui_server

    assert _ui_server.server_env(False)[_ui_server.JOBS_ENV] == "false"
    assert _ui_server.server_env(True)[_ui_server.JOBS_ENV] == "true"
    monkeypatch.setattr(_ui_server, "server_command", lambda uri, host, port, workers: [
        sys.executable, "-m", "http.server", str(port), "--bind", host, "--directory", str(tmp_path)])
    server = _ui_server.UIServer("sqlite:///x.db", port=0, quiet=True, timeout=60)
    assert server.port > 0
    with server:
        assert server.ready_s is not None and server.ready_s > 0 and server._answers()
    assert server.proc.poll() is not None and not server._answers()
    monkeypatch.setattr(_ui_server, "server_command", lambda *a: [sys.executable, "-c", "raise SystemExit(3)"])
    with pytest.raises(MemarchError, match="exited with code 3 before answering"):
        _ui_server.UIServer("sqlite:///x.db", port=0, quiet=True).start()


def test_ui_bad_input_is_one_line(tmp_path, capsys):
    assert main(["ui", "--tracking-uri", f"sqlite:///{tmp_path}/none.db"]) == 2
    assert main(["ui", "--tracking-uri", f"file://{tmp_path}/m", "--workers", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("memarch: error:") for line in err)

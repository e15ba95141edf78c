"""`memarch ui` in a real browser: a tiny study is compiled into a temp MLflow store, the UI is started
on a free loopback port, and headless Chromium renders the runs table and one trial's diagnosis.json.
The runs-table screenshot is kept (path printed; also copied to MEMARCH_TEST_ARTIFACTS or mlruns/)."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memarch.cli import main

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


def _chromium(url: str, profile: Path, *action: str) -> str:
    """Chromium headless on ``url``: the SPA runs until idle (virtual time: waits for its fetches)."""
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           f"--user-data-dir={profile}", "--window-size=1920,1080", "--virtual-time-budget=15000", *action, url]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture
def ui(tmp_path):
    """A 2-trial compile (LM-free, hash embedder) tracked in tmp_path, served by `memarch ui --port 0`."""
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    assert main(["compile", "--benchmark", "generated", "--knob", "conversations=1", "--knob", "sessions=3",
                 "--limit", "6", "--embedder", "hash", "--budget", "2", "--storage", "memory",
                 "--study-name", "uitest", "--tracking-uri", uri, "--out", str(tmp_path),
                 "--output", str(tmp_path / "p.json")]) == 0
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from memarch.cli import main; sys.exit(main())",
                             "ui", "--tracking-uri", uri, "--port", "0", "--timeout", "240"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines = []
    try:
        for line in proc.stdout:  # ends if the UI gives up (its own --timeout) and exits
            lines.append(line)
            if line.startswith("UI ready in"):
                break
        ready = re.match(r"UI ready in ([0-9.]+) s: (\S+)", lines[-1] if lines else "")
        assert ready, "".join(lines)
        yield uri, ready.group(2), float(ready.group(1))
    finally:
        proc.terminate()  # memarch ui stops the server's whole process group on SIGTERM
        proc.wait(timeout=30)


@pytest.mark.integration
@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (`make install` installs it)")
def test_ui_shows_the_study_runs_and_a_diagnosis_in_chromium(ui, tmp_path, capsys):
    from mlflow.tracking import MlflowClient

    from memarch.optimizers.tracking.tracker import EXPERIMENT
    from memarch.optimizers.tracking.ui_view import artifact_url

    uri, url, ready_s = ui
    assert "/runs?workflowType=machine_learning&viewStateShareKey=" in url
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(EXPERIMENT)
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    runs = client.search_runs([exp.experiment_id])
    trials = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    parents = {r.data.tags["mlflow.parentRunId"] for r in trials}
    assert len(trials) == 2 and len(parents) == 1 and len(runs) == 3
    parent = next(r for r in runs if r.info.run_id in parents)

    shot = tmp_path / "ui-runs.png"
    dom = _chromium(url, tmp_path / "profile", "--dump-dom", f"--screenshot={shot}")
    shown = set(re.findall(r'href="#/experiments/\d+/runs/([0-9a-f]+)"', dom))
    assert parent.info.run_id in shown and {t.info.run_id for t in trials} <= shown, sorted(shown)
    for t in trials:
        assert t.info.run_name in dom
    assert 'col-id="metrics.`objective`"' in dom and "Sort: objective" in dom

    trial = trials[0]
    local = client.download_artifacts(trial.info.run_id, "diagnosis.json", str(tmp_path))
    diagnosis = json.loads(Path(local).read_text())
    page = _chromium(artifact_url(url.split("/#/")[0], exp.experiment_id, trial.info.run_id, "diagnosis.json"),
                     tmp_path / "profile", "--dump-dom", f"--screenshot={tmp_path / 'ui-diagnosis.png'}")
    assert "diagnosis.json" in page
    assert all(f'"{key}"' in page for key in diagnosis), [k for k in diagnosis if f'"{key}"' not in page]

    assert shot.stat().st_size > 10_000
    keep = Path(os.environ.get("MEMARCH_TEST_ARTIFACTS", ROOT / "mlruns" / "test-artifacts"))
    keep.mkdir(parents=True, exist_ok=True)
    for name in ("ui-runs.png", "ui-diagnosis.png"):
        shutil.copy(tmp_path / name, keep / name)
    with capsys.disabled():
        print(f"\nUI ready in {ready_s:.1f} s; screenshots: {keep}/ui-runs.png, ui-diagnosis.png")

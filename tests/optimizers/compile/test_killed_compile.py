"""A compile killed with SIGKILL while its background embedding process runs: that process stops
by itself, the embedding cache it and the run wrote is intact (every vector written before the
kill is there, unchanged, after the resumed compile), and `--resume` finishes the study."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from search_helpers import wait_until

pytestmark = pytest.mark.integration


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return []


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _vectors(cache: Path) -> dict[str, bytes]:
    rows: dict[str, bytes] = {}
    for db in cache.glob("*.sqlite"):
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",), db
            for table, in conn.execute("SELECT name FROM sqlite_master WHERE type='table'"):
                rows.update({f"{db.name}/{table}/{k}": v for k, v in conn.execute(f"SELECT k, v FROM {table}")})
    return rows


def _completed(db: Path) -> int:
    """Evaluated distinct trials in the study file, read with plain read-only SQLite: opening it with
    optuna while the compile creates it raced the compile's own schema creation ("table studies already
    exists", the compile exiting 2)."""
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            # a repeat of an evaluated architecture is COMPLETE but not counted: the budget is distinct ones
            return conn.execute(
                "SELECT count(*) FROM trials t WHERE t.state = 'COMPLETE' AND NOT EXISTS (SELECT 1 FROM "
                "trial_user_attributes a WHERE a.trial_id = t.trial_id AND a.key = 'repeat_of')").fetchone()[0]
    except sqlite3.Error:  # not created yet
        return 0


def test_a_killed_compile_stops_its_prefetch_and_resumes_with_its_caches_intact(tmp_path):
    cache, db = tmp_path / "cache", tmp_path / "optuna.db"
    url = f"sqlite:///{db}"
    env = dict(os.environ, MEMARCH_CACHE_DIR=str(cache), HF_HUB_OFFLINE="1")
    cmd = [sys.executable, "-m", "memarch", "compile", "--benchmark", "generated", "--knob", "conversations=3",
           "--knob", "sessions=6", "--strategies", "random", "--warm-start", "none", "--budget", "12",
           "--storage", url, "--study-name", "s", "--no-tracking", "--out", str(tmp_path),
           "--output", str(tmp_path / "p.json")]
    run = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        def prefetching_and_one_trial_done() -> bool:
            assert run.poll() is None, run.stderr.read()[-2000:]
            return bool(_children(run.pid)) and _completed(db) >= 1
        wait_until(prefetching_and_one_trial_done, timeout=300, interval=0.2,
                   what="a trial done while the prefetch runs")
        prefetch = _children(run.pid)
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait()
        run.stderr.close()
    # The orphaned prefetch notices between two batches and exits (it is not ours to reap: poll /proc).
    deadline = time.monotonic() + 60
    while any(_alive(p) for p in prefetch) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_alive(p) for p in prefetch), "the prefetch outlived the compile it served"
    before = _vectors(cache)
    assert before, "nothing reached the cache before the kill"
    assert 1 <= _completed(db) < 12
    resumed = subprocess.run([*cmd, "--resume"], env=env, capture_output=True, text=True, timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert (tmp_path / "p.json").exists() and _completed(db) == 12
    after = _vectors(cache)
    assert {k: after.get(k) for k in before} == before  # nothing written before the kill lost or changed

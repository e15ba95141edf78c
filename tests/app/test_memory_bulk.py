"""`Memory.add_many` and `memarch memory import`: a bulk write is the same memory as one `add` per
session (items, ids, lineage, search results), a bad session anywhere writes nothing, an import
interrupted mid-file goes on where it stopped, and LoCoMo imports whole."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from memarch import Architecture, Memory, MemarchError
from memarch.app.importing import import_file
from memarch.cli import main

ARCH = Architecture(("turn",), "vector", "hybrid", "lightweight")
LOCOMO = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "locomo" / "locomo10.json"



def _sessions(n: int) -> list[dict]:
    """Several users, exact repeats (the manager merges them) and multi-turn sessions."""
    out = []
    for i in range(n):
        said = [{"role": "user", "content": f"note {i % 17}: the code word is w{i % 17}x and I like tea"}]
        if i % 5 == 0:
            said.append({"role": "assistant", "content": f"Noted, note {i} is saved."})
        out.append({"messages": said, "user_id": f"u{i % 3}", "timestamp": f"2026-05-{1 + i % 17:02d}"})
    return out


def _state(memory: Memory) -> dict:
    users = ["u0", "u1", "u2"]
    items = {u: [r.to_dict() for r in memory.get_all(user_id=u, include_deleted=True)] for u in users}
    hits = {u: [(h.id, round(h.score, 6)) for q in ("code word w3x", "tea", "note 11 saved")
                for h in memory.search(q, user_id=u, limit=5)] for u in users}
    return {"items": items, "hits": hits}


def test_add_many_is_the_same_memory_as_one_add_each(program_file, tmp_path, mem_path):
    sessions = _sessions(60)
    with Memory.load(program_file, path=tmp_path / "one") as one:
        kept_one = [one.add(s["messages"], user_id=s["user_id"], timestamp=s["timestamp"]) for s in sessions]
        expected = _state(one)
    with Memory.load(program_file, path=mem_path) as bulk:  # on either backend: the SQLite one-add-each memory
        seen = []
        kept_bulk = bulk.add_many(sessions, batch=7, on_progress=seen.append)  # batches cross users and repeats
        assert seen == [7, 14, 21, 28, 35, 42, 49, 56, 60]
        assert [[r.id for r in k] for k in kept_bulk] == [[r.id for r in k] for k in kept_one]
        assert _state(bulk) == expected
        assert any(r["status"] == "superseded" for rows in expected["items"].values() for r in rows)
    with Memory.load(program_file, path=mem_path) as again:  # and from disk
        assert _state(again) == expected


def test_a_bad_session_anywhere_writes_nothing(program_file, tmp_path, mem_path):
    sessions = _sessions(10)
    sessions[7] = {"messages": "fine", "user": "typo"}
    with Memory.load(program_file, path=mem_path) as memory:
        with pytest.raises(MemarchError, match=r"sessions\[7\]: unknown keys \['user'\]"):
            memory.add_many(sessions)
        with pytest.raises(MemarchError, match=r"sessions\[2\]: messages\[0\]: 'content' must be a non-empty string"):
            memory.add_many(["ok", "fine", {"messages": [{"role": "user", "content": ""}]}])
        with pytest.raises(MemarchError, match="expected a list"):
            memory.add_many("one string is one add, not a list of sessions")
        with pytest.raises(MemarchError, match="batch: expected a positive integer"):
            memory.add_many(["ok"], batch=0)
        assert memory.stats()["episodes"] == 0 and memory.stats()["items"]["active"] == 0


def _jsonl(path: Path, sessions: list[dict]) -> Path:
    path.write_text("# a comment line\n" + "\n".join(json.dumps(s) for s in sessions) + "\n\n")
    return path


def test_an_interrupted_import_goes_on_where_it_stopped(program_file, tmp_path, mem_path):
    sessions = _sessions(40)
    source = _jsonl(tmp_path / "chats.jsonl", sessions)
    with Memory.load(program_file, path=tmp_path / "whole") as whole:
        out = import_file(whole, source, "jsonl", batch=8)
        assert (out["sessions"], out["skipped"], out["written"]) == (40, 0, 40) and out["items"] > 0
        expected = _state(whole)

    class Crash(Exception):
        pass

    def crash_after_two_batches(done: int, total: int) -> None:
        if done >= 16:
            raise Crash  # after the 2nd batch committed, as a kill between batches would

    with Memory.load(program_file, path=mem_path) as memory:
        with pytest.raises(Crash):
            import_file(memory, source, "jsonl", batch=8, on_progress=crash_after_two_batches)
        assert memory.stats()["episodes"] == 16
    with Memory.load(program_file, path=mem_path) as memory:  # a new process, the same command
        out = import_file(memory, source, "jsonl", batch=8)
        assert (out["skipped"], out["written"]) == (16, 24)
        assert _state(memory) == expected
        assert import_file(memory, source, "jsonl", batch=8)["written"] == 0  # nothing twice


def test_memory_import_cli(program_file, tmp_path, capsys):
    source = _jsonl(tmp_path / "chats.jsonl", _sessions(12))
    def args(src):
        return ["memory", "import", str(tmp_path / "mem"), "--from", "jsonl", "--input", str(src),
                "--program", str(program_file), "--batch", "5"]

    assert main(args(source)) == 0
    assert "imported 12 sessions" in capsys.readouterr().out
    assert main(args(source)) == 0
    out = capsys.readouterr().out
    assert "imported 0 sessions (0 items kept)" in out and "12 already there" in out
    assert main(["memory", "stats", str(tmp_path / "mem")]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert (stats["program"], stats["episodes"], stats["users"]) == (ARCH.key(), 12, 3)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": "ok"}\n{not json\n')
    for argv, line in [
        (args(bad), "bad.jsonl:2: not JSON"),
        (args(tmp_path / "missing.jsonl"), "missing.jsonl: no such file"),
        (["memory", "stats", str(tmp_path / "nothing")], "no memory here"),
    ]:
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert line in err and "\n" not in err and "Traceback" not in err
    assert main(["memory", "stats", str(tmp_path / "mem")]) == 0
    assert json.loads(capsys.readouterr().out)["episodes"] == 12  # the failed imports wrote nothing


@pytest.mark.integration
def test_locomo_imports_whole(program_file, tmp_path):
    if not LOCOMO.is_file():
        pytest.skip(f"no LoCoMo at {LOCOMO}")
    with Memory.load(program_file, path=tmp_path / "locomo") as memory:
        out = import_file(memory, LOCOMO, "locomo")
        stats = memory.stats()
        assert out == {"sessions": 272, "skipped": 0, "written": 272, "items": stats["items"]["active"]}
        assert stats["users"] == 10 and stats["episodes"] == 272
        hit = memory.search("What did Caroline research?", user_id="conv-26", limit=5)
        assert hit and all(h.user_id == "conv-26" for h in hit)
        assert hit[0].episode_id.startswith("conv-26/session_")

"""`memarch.Memory`, the compiled program in an app: add / search / history / delete with
provenance, state that survives a restart, two writer processes that lose nothing, users that
never see each other's items, and one-line errors."""
from __future__ import annotations

import multiprocessing as mp
import re
import sqlite3
from pathlib import Path

import pytest

from memarch import Architecture, Memory, MemarchError
from memarch.pipeline.program import MemoryProgram

ARCH = Architecture(("turn",), "hybrid", "hybrid", "lightweight")
README = Path(__file__).resolve().parents[2] / "README.md"
N_PER_WRITER = 20



def test_add_then_search_returns_items_with_provenance(program_file, tmp_path, mem_path):
    memory = Memory.load(program_file, path=mem_path)
    kept = memory.add([{"role": "user", "content": "I moved to Lisbon in May."},
                       {"role": "assistant", "content": "How do you like the bakery job?"}],
                      user_id="ana", timestamp="2026-05-03T10:00:00")
    assert [r.source_ids for r in kept] == [["e1:0"], ["e1:1"]]
    memory.add("My sister Rita plays the cello.", user_id="ana", timestamp="2026-06-01")
    hits = memory.search("who plays the cello?", user_id="ana", limit=2)
    assert len(hits) == 2 and hits[0].score >= hits[1].score
    top = hits[0]
    assert "cello" in top.text and top.text.startswith("user (1 June 2026):")
    assert (top.encoder, top.user_id, top.episode_id, top.source_ids) == ("turn", "ana", "e2", ["e2:0"])
    assert top.event_time == "2026-06-01"
    assert [e["action"] for e in top.lineage][:2] == ["created", "admitted"]
    assert memory.history(top.id) == top.lineage
    assert memory.source(top.id) == [{"turn_id": "e2:0", "speaker": "user", "text": "My sister Rita plays the cello."}]
    assert "cello" in memory.context("who plays the cello?", user_id="ana")


def test_state_survives_a_restart_and_a_repeat_is_merged_with_lineage(program_file, tmp_path, mem_path):
    first = Memory.load(program_file, path=mem_path)
    first.add("I adopted a cat named Miso.", user_id="ana", timestamp="2026-05-03")
    first.add("I adopted a cat named Miso.", user_id="ana", timestamp="2026-05-03")  # the same words again
    first.close()
    again = Memory.load(program_file, path=mem_path)  # a fresh program rebuilt from disk
    assert again.count(user_id="ana") == 1
    hit = again.search("cat name", user_id="ana")[0]
    assert "Miso" in hit.text and len(hit.merged_from) == 1
    merged = again.get(hit.merged_from[0], user_id="ana")
    assert merged.status == "superseded"
    assert [e["action"] for e in again.history(merged.id)][-1] == "superseded_by"


def _writer(program: str, path: str, name: str, start, done, out) -> None:
    memory = Memory.load(program, path=path)
    start.wait()
    for i in range(N_PER_WRITER):
        memory.add(f"{name} note {i} about topic{name}{i}", user_id="shared", timestamp="2026-05-03")
    done.wait()  # both finished: this process must now see the other's writes too
    seen = {h.text.split(": ", 1)[1] for h in memory.search("note", user_id="shared", limit=4 * N_PER_WRITER)}
    out.put((name, memory.count(user_id="shared"), len(seen)))


def test_two_writer_processes_lose_nothing(program_file, tmp_path, mem_path):
    ctx = mp.get_context("spawn")
    start, done, out = ctx.Barrier(2), ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(str(program_file), str(mem_path), name, start, done, out))
             for name in ("alpha", "beta")]
    for p in procs:
        p.start()
    results = sorted(out.get(timeout=240) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert results == [("alpha", 2 * N_PER_WRITER, 2 * N_PER_WRITER), ("beta", 2 * N_PER_WRITER, 2 * N_PER_WRITER)]
    memory = Memory.load(program_file, path=mem_path)  # after both processes exited
    texts = {r.text.split(": ", 1)[1] for r in memory.get_all(user_id="shared")}
    assert texts == {f"{n} note {i} about topic{n}{i}" for n in ("alpha", "beta") for i in range(N_PER_WRITER)}
    episodes = {r.episode_id for r in memory.get_all(user_id="shared")}
    assert len(episodes) == 2 * N_PER_WRITER  # every add got its own episode number
    assert memory.count(user_id="shared") == 2 * N_PER_WRITER


def test_a_user_never_sees_another_users_items(program_file, tmp_path, mem_path):
    memory = Memory.load(program_file, path=mem_path)
    other = Memory.load(program_file, path=mem_path)  # a second handle: isolation holds after catch-up
    for i, city in enumerate(("Lisbon", "Porto", "Faro")):
        memory.add(f"I live in {city} and work at the bakery.", user_id="ana", timestamp=f"2026-05-0{i + 1}")
        other.add(f"I live in {city} and work at the bakery.", user_id="bob", timestamp=f"2026-05-0{i + 1}")
    for handle in (memory, other):
        for query in ("where do I live?", "bakery", "Lisbon Porto Faro"):
            for user in ("ana", "bob"):
                hits = handle.search(query, user_id=user, limit=10)
                assert len(hits) == 3 and {h.user_id for h in hits} == {user}
    assert memory.search("bakery", user_id="carol") == []
    bob_item = other.get_all(user_id="bob")[0]
    with pytest.raises(MemarchError, match="no memory item"):
        memory.get(bob_item.id, user_id="ana")


def test_delete_an_item_and_a_user(program_file, tmp_path, mem_path):
    memory = Memory.load(program_file, path=mem_path)
    reader = Memory.load(program_file, path=mem_path)
    memory.add("I like green tea.", user_id="ana", timestamp="2026-05-01")
    memory.add("I like black coffee.", user_id="ana", timestamp="2026-05-02")
    memory.add("I like mint tea.", user_id="bob", timestamp="2026-05-02")
    tea = memory.search("green tea", user_id="ana", limit=1)[0]
    assert memory.delete(user_id="ana", item_id=tea.id) == 1
    assert tea.id not in [h.id for h in reader.search("green tea", user_id="ana")]
    assert reader.history(tea.id)[-1]["action"] == "deleted"
    assert memory.delete(user_id="bob") == 1
    assert reader.search("tea", user_id="bob") == [] and reader.get_all(user_id="bob", include_deleted=True) == []
    assert reader.count(user_id="ana") == 1
    reader.add("I like oolong tea.", user_id="bob", timestamp="2026-05-03")  # a deleted user can start again
    assert [h.text for h in memory.search("tea", user_id="bob")] == ["user (3 May 2026): I like oolong tea."]
    assert memory.delete(user_id="ana", item_id=tea.id) == 0  # deleting again: idempotent, nothing written
    assert reader.history(tea.id)[-1]["action"] == "deleted" and len(reader.history(tea.id)) == len(memory.history(tea.id))
    with pytest.raises(MemarchError, match="no memory item 'nope' of user 'ana'"):
        memory.delete(user_id="ana", item_id="nope")


def test_a_bare_architecture_file_is_a_program(tmp_path, hash_resources):
    ARCH.save(tmp_path / "arch.json")
    memory = Memory.load(tmp_path / "arch.json", path=tmp_path / "mem", resources=hash_resources)
    memory.add("The meeting moved to Friday.", user_id="team")
    assert memory.search("when is the meeting?", user_id="team")[0].encoder == "turn"


def _one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text and "Traceback" not in text
    return text


def test_clear_one_line_errors(program_file, tmp_path):
    with pytest.raises(MemarchError) as exc:
        Memory.load(tmp_path / "missing.json", path=tmp_path / "mem")
    assert "not found" in _one_line(exc)
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(MemarchError, match="malformed JSON"):
        Memory.load(tmp_path / "bad.json", path=tmp_path / "mem")
    (tmp_path / "other.json").write_text('{"hello": 1}')
    with pytest.raises(MemarchError, match="neither a saved memarch program"):
        Memory.load(tmp_path / "other.json", path=tmp_path / "mem")
    (tmp_path / "afile").write_text("x")
    with pytest.raises(MemarchError, match="is a file"):
        Memory.load(program_file, path=tmp_path / "afile")
    (tmp_path / "corrupt").mkdir()
    (tmp_path / "corrupt" / "memory.db").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(MemarchError) as exc:
        Memory.load(program_file, path=tmp_path / "corrupt")
    assert "not a memarch memory database" in _one_line(exc)
    memory = Memory.load(program_file, path=tmp_path / "mem")
    for bad, match in (([], "non-empty list"), ([{"role": "user"}], r"messages\[0\]: 'content'"), (3, "got int")):
        with pytest.raises(MemarchError, match=match):
            memory.add(bad, user_id="ana")
    with pytest.raises(MemarchError, match="user_id"):
        memory.add("hi", user_id="")
    with pytest.raises(MemarchError, match="timestamp"):
        memory.add("hi", user_id="ana", timestamp="last tuesday")
    with pytest.raises(MemarchError, match="limit"):
        memory.search("hi", user_id="ana", limit=0)
    assert memory.get_all(user_id="ana") == []  # nothing half-written by the refused calls


def test_a_path_is_owned_by_the_program_that_first_used_it(program_file, tmp_path, hash_resources):
    Memory.load(program_file, path=tmp_path / "mem").add("hello", user_id="ana")
    other = tmp_path / "other.json"
    MemoryProgram(Architecture(("turn",), "json", "hybrid", "json_full"), resources=hash_resources).save(other)
    with pytest.raises(MemarchError, match=re.escape("holds the memory of turn|hybrid|hybrid|lightweight")):
        Memory.load(other, path=tmp_path / "mem")


def test_a_failed_write_leaves_memory_as_committed(program_file, tmp_path, monkeypatch):
    memory = Memory.load(program_file, path=tmp_path / "mem")
    memory.add("first", user_id="ana")

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(memory.db, "bump", boom)
    with pytest.raises(RuntimeError):
        memory.add("second", user_id="ana")
    monkeypatch.undo()
    assert memory.count(user_id="ana") == 1 and len(memory.get_all(user_id="ana")) == 1
    with sqlite3.connect(tmp_path / "mem" / "memory.db") as conn:
        assert conn.execute("SELECT count(*) FROM episodes").fetchone()[0] == 1


def test_a_write_commits_the_rows_its_stores_change_log_names(program_file, tmp_path):
    """No write method of the store is replaced on the instance: a write drains the store's change
    log into rows, and a handle that catches up on another's commit logs nothing to write back."""
    writer = Memory.load(program_file, path=tmp_path / "mem")
    reader = Memory.load(program_file, path=tmp_path / "mem")
    assert not {"add", "update", "delete"} & set(vars(writer.program.store))
    writer.add("I moved to Lisbon in May.", user_id="ana", timestamp="2026-05-01")
    writer.add("My sister Rita plays the cello.", user_id="bob", timestamp="2026-05-02")
    assert not writer.program.store.log_changes()  # drained by the commit
    with sqlite3.connect(tmp_path / "mem" / "memory.db") as conn:
        seq = dict(conn.execute("SELECT namespace, max(seq) FROM items GROUP BY namespace").fetchall())
    assert seq == {"ana": 1, "bob": 2}  # bob's write rewrote no row of ana's
    assert "cello" in reader.search("cello", user_id="bob", limit=1)[0].text
    assert not reader.program.store.log_changes()  # what it caught up on is committed already


def test_the_readme_example_runs(program_file, monkeypatch):
    text = README.read_text(encoding="utf-8")
    section = text.split("## Use the compiled memory in your app", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(program_file.parent)  # the example loads ./program.json into ./mem/
    exec(compile(code, "README.md", "exec"), {})


@pytest.mark.parametrize("store", ["json", "vector", "hybrid", "graph"])
def test_every_store_sees_another_handles_writes(store, tmp_path, hash_resources, mem_path):
    arch = Architecture(("turn",), store, "hybrid", "json_full")
    writer = Memory.load(arch, path=mem_path, resources=hash_resources)
    reader = Memory.load(arch, path=mem_path, resources=hash_resources)
    assert reader.search("cello", user_id="ana") == []
    writer.add("My sister Rita plays the cello.", user_id="ana", timestamp="2026-05-01")
    writer.add("I bake sourdough on Sundays.", user_id="ana", timestamp="2026-05-02")
    assert "cello" in reader.search("who plays the cello?", user_id="ana", limit=1)[0].text
    writer.delete(user_id="ana", item_id=writer.search("sourdough", user_id="ana", limit=1)[0].id)
    assert [h.text for h in reader.search("sourdough bread", user_id="ana", limit=5) if "sourdough" in h.text] == []


def _add_in_child(memory: Memory) -> None:
    # PostgreSQL: a pool per process; SQLite: a connection per thread and process
    pooled = hasattr(type(memory.db), "pool")
    parent = memory.db._pool if pooled else memory.db._local.conn  # what the forking thread held
    memory.add("Written by a forked worker.", user_id="ana", timestamp="2026-05-01")
    if (memory.db._pool if pooled else memory.db._local.conn) is parent:  # connections must not cross a fork
        raise SystemExit(3)


def test_a_forked_worker_opens_its_own_connection(program_file, tmp_path, mem_path):
    memory = Memory.load(program_file, path=mem_path)  # loaded before the fork, as a preloading server does
    memory.add("Written by the parent.", user_id="ana", timestamp="2026-05-01")
    child = mp.get_context("fork").Process(target=_add_in_child, args=(memory,))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0
    assert sorted(h.text for h in memory.search("written", user_id="ana")) == [
        "user (1 May 2026): Written by a forked worker.", "user (1 May 2026): Written by the parent."]


def test_an_experience_program_takes_episodes_not_messages(tmp_path, hash_resources):
    from memarch import Episode, Step

    memory = Memory.load(Architecture(("trajectory",), "json", "hybrid", "lightweight"), path=tmp_path / "mem",
                         resources=hash_resources)
    with pytest.raises(MemarchError, match="reads agent steps, not messages; use add_episode"):
        memory.add("open the fridge", user_id="agent")
    memory.add_episode(Episode(id="", task="put an apple in the fridge", outcome="success",
                               steps=[Step("s1", "open fridge", "The fridge is open."),
                                      Step("s2", "put apple in fridge", "Done.")]), user_id="agent")
    hit = memory.search("put an egg in the fridge", user_id="agent")[0]
    assert (hit.encoder, hit.episode_id, hit.user_id) == ("trajectory", "e1", "agent")
    assert [s["action"] for s in memory.source(hit.id)] == ["open fridge", "put apple in fridge"]


def test_the_manager_curates_against_other_handles_writes(program_file, tmp_path, mem_path):
    first = Memory.load(program_file, path=mem_path)
    second = Memory.load(program_file, path=mem_path)
    first.add("I adopted a cat named Miso.", user_id="ana", timestamp="2026-05-03")
    second.add("I adopted a cat named Miso.", user_id="ana", timestamp="2026-05-03")  # caught up inside the lock
    assert first.count(user_id="ana") == second.count(user_id="ana") == 1
    (kept,) = second.get_all(user_id="ana")
    assert kept.episode_id == "e1" and len(kept.merged_from) == 1
    assert second.get(kept.merged_from[0]).episode_id == "e2"


def test_a_programs_saved_memory_bank_is_not_used_and_says_so(tmp_path, hash_resources, caplog):
    from memarch import Episode, Turn

    program = MemoryProgram(ARCH, resources=hash_resources)
    program.write(Episode(id="bench", turns=[Turn("D1:1", "Caroline", "I went to the support group.")]))
    program.save(tmp_path / "with_bank.json")  # include_memory=True
    with caplog.at_level("WARNING"):
        memory = Memory.load(tmp_path / "with_bank.json", path=tmp_path / "mem")
    assert "saved memory bank (1 items) is not used" in caplog.text
    assert memory.search("support group", user_id="default") == []


def test_threads_sharing_a_handle_or_holding_their_own_lose_nothing(program_file, tmp_path, mem_path):
    import threading

    shared = Memory.load(program_file, path=mem_path)
    handles = [shared, shared, Memory.load(program_file, path=mem_path)]
    errors: list[BaseException] = []

    def write(k: int, memory: Memory) -> None:
        try:
            for i in range(10):
                memory.add(f"thread{k} wrote line{k}x{i}", user_id="ana", timestamp="2026-05-03")
        except BaseException as exc:  # surfaced below: a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(k, h)) for k, h in enumerate(handles)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert {r.text.split(": ", 1)[1] for r in shared.get_all(user_id="ana")} == {
        f"thread{k} wrote line{k}x{i}" for k in range(3) for i in range(10)}
    assert shared.count(user_id="ana") == handles[2].count(user_id="ana") == 30


def test_the_app_benchmark_runs_and_prints_its_table(capsys):
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_memory_app.py"
    spec = importlib.util.spec_from_file_location("bench_memory_app", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = bench.main(["--sizes", "60", "--stores", "json,hybrid", "--turns", "3", "--fill-batch", "30",
                       "--no-model", "--data", "ignored"])
    out = capsys.readouterr().out
    assert [r["store"] for r in rows] == ["json", "hybrid"] and all(r["size"] >= 60 for r in rows)
    assert all(r["pair"][1] >= r["pair"][0] > 0 for r in rows)
    assert "add+search p50/p95" in out and "add -> search p95 < 20 ms at" in out


def test_a_search_does_not_wait_for_another_users_add(program_file, mem_path, monkeypatch):
    """While an add of ana's is inside its transaction (its encoder made slow here), a search of
    bob's runs and returns at once; a search of ana's waits for the add and sees what it wrote."""
    import threading
    import time

    memory = Memory.load(program_file, path=mem_path)
    memory.add("I keep bees in the garden.", user_id="bob", timestamp="2026-05-01")
    memory.add("I play the oboe.", user_id="ana", timestamp="2026-05-01")
    encoder = memory.program.encoders[0]
    inside, release = threading.Event(), threading.Event()
    original = type(encoder).encode

    def slow_encode(self, episode):
        if episode.namespace == "ana":
            inside.set()
            release.wait(30)
        return original(self, episode)

    monkeypatch.setattr(type(encoder), "encode", slow_encode)
    writer = threading.Thread(target=memory.add, args=("I moved to Lisbon in May.",),
                              kwargs={"user_id": "ana", "timestamp": "2026-05-02"})
    writer.start()
    try:
        assert inside.wait(30)
        t0 = time.monotonic()
        assert [h.text for h in memory.search("bees", user_id="bob")] == ["user (1 May 2026): I keep bees in the garden."]
        assert memory.count(user_id="bob") == 1
        assert time.monotonic() - t0 < 5  # did not wait for ana's add (which waits for `release`)
        got: list = []
        reader = threading.Thread(target=lambda: got.append(memory.search("Lisbon", user_id="ana")))
        reader.start()
        reader.join(0.5)
        assert reader.is_alive()  # ana's search waits for ana's add
    finally:
        release.set()
        writer.join(60)
    reader.join(60)
    assert any("Lisbon" in h.text for h in got[0])

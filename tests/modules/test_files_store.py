"""The `files` store and memory as a skill: atomic notes under a kill, namespaces, safe keys, the
note actions (NoteSession), the LM-free note policy's counts, and the DSPy agent's note tools."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import dspy
import pytest
from dspy.utils import DummyLM

from memarch.errors import DataError
from memarch.modules.stores._notes import check_directory, safe_name
from memarch.modules.stores.files import FilesStore
from memarch.benchmarks.agents.memory_skill import NoteSession, move_counts, skill_costs
from memarch.benchmarks.agents.note_policy import NotePolicy
from memarch.benchmarks.agents.note_tools import NoteToolAgent

REPO = Path(__file__).resolve().parents[2]

KITCHEN = ("You are in the kitchen. In one part of the room you see a stove. \n"
           "To the South you see the corridor. To the West you see the pantry. ")
CORRIDOR = "You are in the corridor. There is a coin. \nTo the North you see the kitchen. "


@pytest.fixture
def store(hash_resources, tmp_path):
    return FilesStore(hash_resources, root=str(tmp_path / "notes"))


def scaffold(upsert: int, search: int, kv: int = 1) -> dict:
    return {"upsert": upsert, "search_before_write": search, "kv_schema": kv}


def test_kill_mid_write_leaves_no_torn_note(tmp_path, hash_resources):
    root = tmp_path / "notes"
    script = textwrap.dedent(f"""
        import sys
        from memarch.modules.stores.files import FilesStore
        from memarch.pipeline.embed import Embedder
        from memarch.pipeline.resources import Resources
        store = FilesStore(Resources(embedder=Embedder("hash")), root={str(root)!r})
        i = 0
        while True:  # notes of ~2 MB rewritten in turn: the kill lands anywhere, often in a write
            store.upsert_note(f"room {{i % 4}}", f"visit {{i}}\\n" + "exit north: corridor\\n" * 100000, "ep")
            i += 1
            if i == 6:
                print("writing", flush=True)
    """)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env=env, cwd=str(REPO))
    try:
        assert proc.stdout.readline().strip() == b"writing"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    found = check_directory(root)
    assert found["torn"] == []
    assert len(found["notes"]) == 4
    # a store opened on the directory removes what the killed write left behind, and says how many
    reopened = FilesStore(hash_resources, root=str(root))
    assert reopened.leftovers_removed == len(found["leftovers"])
    assert reopened.check()["leftovers"] == [] and len(reopened.check()["notes"]) == 4


def test_namespaces_kept_apart(store):
    store.upsert_note("kitchen", "exit south: corridor", "alice")
    store.upsert_note("kitchen", "exit west: pantry", "bob")
    assert store.read_note("kitchen", "alice") == "exit south: corridor"
    assert store.read_note("kitchen", "bob") == "exit west: pantry"
    assert store.search_notes("corridor", "bob") == []
    assert [k for k, _, _ in store.search_notes("corridor", "alice")] == ["kitchen"]
    assert store.delete_note("kitchen", "alice") and store.read_note("kitchen", "alice") is None
    assert store.read_note("kitchen", "bob") == "exit west: pantry"
    assert store.directory("alice") != store.directory("bob")
    assert not store.note_path("kitchen", "alice").exists() and store.note_path("kitchen", "bob").exists()


def test_keys_are_sanitised_into_safe_file_names(store):
    keys = ["../../etc/passwd", "a/b", ".hidden", "x" * 300, "kitchen", "kitchen?", "C:\\win", "ns/../up"]
    for i, key in enumerate(keys):
        store.upsert_note(key, f"note {i}", "../escape")
    base = store.directory("../escape").resolve()
    assert base.parent == store.root.resolve()
    paths = {store.note_path(k, "../escape").resolve() for k in keys}
    assert len(paths) == len(keys)  # distinct keys never share a file
    assert all(p.parent == base and len(p.name) < 120 for p in paths)
    assert [store.read_note(k, "../escape") for k in keys] == [f"note {i}" for i in range(len(keys))]
    assert safe_name("kitchen") == "kitchen" and "/" not in safe_name("a/b")
    with pytest.raises(DataError):
        safe_name("  ")


def test_store_is_registered_for_experience_with_scaffold_knobs():
    from memarch.pipeline.architecture import Architecture
    from memarch.pipeline.registry import REGISTRY
    from memarch.pipeline.space import ArchitectureSpace

    assert "files" in REGISTRY.names("store", "experience")
    assert "files" not in REGISTRY.names("store", "conversation")
    assert {k.name for k in REGISTRY.get("store", "files").knobs} == {"upsert", "kv_schema", "search_before_write"}
    # opt-in: the AutoMem menu (3720 tuples) leaves it out and says so; a note-taking benchmark's space has it
    space = ArchitectureSpace("experience", lm_available=False)
    assert "files" not in space.stores and space.left_out == ["store:files"]
    assert space.is_valid(Architecture(("trajectory",), "files", "hybrid", "tool_manager"))
    notes = ArchitectureSpace("experience", lm_available=False, opt_in=True)
    assert "files" in notes.stores and notes.total() > space.total()
    assert ArchitectureSpace("experience").total() == 3720
    assert not notes.is_valid(Architecture(("trajectory",), "files", "hybrid", "tool_manager",
                                           params={"store.upsert": 2}))
    from memarch.benchmarks.textworld import TextWorldBenchmark

    assert TextWorldBenchmark.opt_in_modules


def test_session_actions_do_what_they_say(store):
    s = NoteSession(store, "ep", scaffold(upsert=0, search=0))
    assert s.upsert("kitchen", "x").startswith("refused")
    s.append("kitchen", "exit south: corridor")
    s.append("kitchen", "exit south: corridor")  # the same line again: a duplicate write
    assert s.read("kitchen") == "exit south: corridor\nexit south: corridor"
    assert s.search("zebra") == [] and s.search("corridor") == ["kitchen: exit south: corridor\nexit south: corridor"]
    assert s.delete("kitchen") == "ok" and s.read("kitchen") == "" and s.delete("kitchen") == "no such note"
    assert dict(s.counts) == {"memory_actions": 9, "refused": 1, "writes": 2, "duplicate_writes": 1, "reads": 2,
                              "searches": 2, "empty_searches": 1, "deletes": 2}
    up = NoteSession(store, "ep2", scaffold(upsert=1, search=0))
    up.upsert("kitchen", "exit south: corridor\ntook: coin")
    up.upsert("kitchen", "took: apple")  # key: value: replaces the field, keeps the others
    assert up.read("kitchen") == "exit south: corridor\ntook: apple"
    up.upsert("kitchen", "took: apple")
    assert up.counts["duplicate_writes"] == 1 and up.stored_duplicate_lines() == 0
    free = NoteSession(store, "ep3", scaffold(upsert=1, search=0, kv=0))
    free.upsert("kitchen", "The stove is here.")
    free.upsert("kitchen", "The coin is here.")  # free text: the note is replaced
    assert free.read("kitchen") == "The coin is here."


def test_search_before_write_skips_what_is_stored(store):
    s = NoteSession(store, "ep", scaffold(upsert=0, search=1))
    s.write("kitchen", "room: kitchen\nexit south: corridor")
    s.write("kitchen", "room: kitchen\nexit south: corridor\ntook: coin")
    s.write("kitchen", "room: kitchen")
    assert s.read("kitchen") == "room: kitchen\nexit south: corridor\ntook: coin"
    assert s.counts["writes"] == 2 and s.counts["duplicate_writes"] == 0 and s.counts["searches"] == 3
    assert s.counts["empty_searches"] == 1  # the first search, before any note


def play(session: NoteSession) -> NotePolicy:
    """kitchen -> corridor -> kitchen -> corridor, taking the coin on the second visit."""
    policy = NotePolicy(session)
    policy.observe("", KITCHEN)
    for action, obs in [("move south", CORRIDOR), ("move north", KITCHEN), ("move south", CORRIDOR),
                        ("take coin", "You take the coin.")]:
        policy.observe(action, obs)
    return policy


def test_lm_free_policy_counts_per_scaffold(store):
    append = NoteSession(store, "a", scaffold(upsert=0, search=0))
    play(append)
    # writes: 4 room entries + 3 moves + 1 take; the second visits and the repeated move repeat lines
    assert append.counts["writes"] == 8 and append.counts["duplicate_writes"] == 3
    assert append.stored_duplicate_lines() == 6  # kitchen: its 3 lines and the move again; corridor: 2
    upsert = NoteSession(store, "u", scaffold(upsert=1, search=0))
    play(upsert)
    assert upsert.counts["writes"] == 8 and upsert.counts["duplicate_writes"] == 3
    assert upsert.stored_duplicate_lines() == 0
    careful = NoteSession(store, "c", scaffold(upsert=1, search=1))
    policy = play(careful)
    assert careful.counts["writes"] == 5 and careful.counts["duplicate_writes"] == 0
    assert careful.counts["searches"] == 8 and careful.counts["empty_searches"] == 1
    assert careful.read("corridor") == "room: corridor\nexit north: kitchen\nmove north: kitchen\ntook: coin"
    assert "move south: corridor" in careful.read("kitchen")
    policy.room = "kitchen"  # back in the kitchen: south was taken from here, west was not
    assert policy.hints(["move south", "move west", "look around"]) == {"move south": -0.5}
    assert policy.hints(["move south"]) == {}  # nothing untried: no steering


def test_move_counts_and_costs():
    acts = ["move south", "move north", "move south", "look around", "look around"]
    obs = ["c", "k", "c", "k room", "k room"]
    assert move_counts(acts, obs) == {"stuck_moves": 2.0, "back_and_forth_moves": 1.0}
    costs = skill_costs({"stuck_moves": 2, "back_and_forth_moves": 1, "memory_actions": 10, "steps": 4,
                         "writes": 3, "duplicate_writes": 1})
    assert costs["memory_actions_per_step"] == 2.5 and costs["duplicate_writes"] == 1.0


def test_dummy_lm_agent_uses_the_note_tools(store):
    session = NoteSession(store, "ep", scaffold(upsert=1, search=0))
    lm = DummyLM([
        {"next_thought": "note the exits", "next_tool_name": "upsert",
         "next_tool_args": {"key": "kitchen", "text": "exit south: corridor"}},
        {"next_thought": "check", "next_tool_name": "read", "next_tool_args": {"key": "kitchen"}},
        {"next_thought": "find it", "next_tool_name": "search", "next_tool_args": {"query": "corridor"}},
        {"next_thought": "done", "next_tool_name": "finish", "next_tool_args": {}},
        {"reasoning": "go south", "action": "move south"},
    ], adapter=dspy.ChatAdapter())
    agent = NoteToolAgent(lm, session)
    action, info = agent.act("coin: find the coin", KITCHEN, ["move south", "move west"], [], "", [])
    assert action == "move south" and info["lm"] is True
    assert store.read_note("kitchen", "ep") == "exit south: corridor"
    assert info["trajectory"]["observation_1"] == "exit south: corridor"
    assert info["trajectory"]["observation_2"] == ["kitchen: exit south: corridor"]
    assert dict(session.counts) == {"memory_actions": 3, "writes": 1, "reads": 1, "searches": 1}
    assert agent.fallbacks == 0
    names = [t.__name__ for t in NoteSession(store, "x", scaffold(upsert=0, search=0)).tools()]
    assert names == ["read", "search", "append", "delete"]  # append-only offers no upsert


def test_dummy_lm_answer_outside_admissible_falls_back(store):
    session = NoteSession(store, "ep", scaffold(upsert=0, search=0))
    lm = DummyLM([{"next_thought": "write", "next_tool_name": "append",
                   "next_tool_args": {"key": "kitchen", "text": "saw stove"}},
                  {"next_thought": "done", "next_tool_name": "finish", "next_tool_args": {}},
                  {"reasoning": "fly", "action": "fly away"}], adapter=dspy.ChatAdapter())
    agent = NoteToolAgent(lm, session)
    action, info = agent.act("t", KITCHEN, ["move south", "move west"], [], "", [])
    assert action in ("move south", "move west") and info["lm"] is False and agent.fallbacks == 1
    assert store.read_note("kitchen", "ep") == "saw stove"


@pytest.mark.skipif(shutil.which("java") is None, reason="TextWorldExpress needs Java (make install)")
def test_textworld_run_reports_the_skill(hash_resources):
    from memarch.benchmarks.textworld import TextWorldBenchmark
    from memarch.benchmarks.evaluation.evaluate import evaluate

    bench = TextWorldBenchmark(games=("coin",), tasks_per_game=4, step_limit=20, seed=0)
    arch = {"schema_version": "1", "encode": ["trajectory"], "store": "files", "retrieve": "hybrid",
            "manage": "tool_manager", "params": {"store.upsert": 0, "store.search_before_write": 0}}
    r = evaluate(arch, bench, split="validation", resources=hash_resources)
    assert not r.failed, r.error
    skill = r.metadata["memory_skill"]
    assert skill["writes"] > 0 and skill["reads"] > 0 and skill["searches"] == 0
    assert r.cost["memory_actions_per_step"] == pytest.approx(skill["memory_actions"] / skill["steps"], abs=1e-4)
    assert {"duplicate_writes", "empty_searches", "stuck_moves", "back_and_forth_moves"} <= set(r.cost)


def test_program_on_files_store_saves_and_reloads(hash_resources, tmp_path):
    from memarch.pipeline.architecture import Architecture
    from memarch.pipeline.episodes import Episode, Query, Step
    from memarch.pipeline.program import MemoryProgram

    arch = Architecture(("trajectory",), "files", "hybrid", "lightweight", params={"store.upsert": 0})
    program = MemoryProgram(arch, resources=hash_resources, top_k=3)
    for i, obj in enumerate(["apple", "tomato"]):
        program.write(Episode(id=f"ep{i}", task=f"put a clean {obj} in the fridge", outcome="success",
                              steps=[Step(id="s1", action=f"take {obj}", observation="ok"),
                                     Step(id="s2", action="open fridge", observation="ok")]))
    assert program.store.scaffold["upsert"] == 0 and program.store.check()["notes"]
    r = program.read(Query("put a clean egg in the fridge"))
    again = MemoryProgram.load(program.save(tmp_path / "p.json"), resources=hash_resources)
    assert again.read(Query("put a clean egg in the fridge")).ids() == r.ids() and r.items
    assert again.store.root != program.store.root and again.store.check()["notes"]

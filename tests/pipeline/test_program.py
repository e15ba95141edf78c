"""MemoryProgram end to end: write episodes, read scored items with provenance, save/load as JSON."""
from __future__ import annotations

import json

import pytest

from memarch.errors import DataError, MemarchError
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.episodes import Episode, Query, Step, Turn
from memarch.pipeline.program import MemoryProgram
from memarch.pipeline.space import ArchitectureSpace


def kitchen(i: int, obj: str, outcome: str = "success") -> Episode:
    return Episode(
        id=f"ep{i}", task=f"put a clean {obj} in the fridge", outcome=outcome, time=f"2024-01-{i + 1:02d}",
        steps=[Step("s1", "go to countertop", f"You see a {obj}."),
               Step("s2", f"take {obj} from countertop", f"You pick up the {obj}."),
               Step("s3", "go to sinkbasin", "You arrive at the sink."),
               Step("s4", f"clean {obj} with sinkbasin", f"You clean the {obj}."),
               Step("s5", "go to fridge", "The fridge is closed."),
               Step("s6", "open fridge", "You open the fridge."),
               Step("s7", f"put {obj} in fridge", "Done." if outcome == "success" else "Nothing happens.")])


def session(i: int) -> Episode:
    date = f"2023-05-{i + 1:02d}"
    return Episode(id=f"s{i}", time=date, namespace="conv", turns=[
        Turn(f"D{i}:1", "Caroline", f"I went hiking in the mountains on day {i}.", date),
        Turn(f"D{i}:2", "Melanie", "That sounds lovely, I painted a sunset.", date)])


LM_FREE_STORES = ArchitectureSpace("experience", lm_available=False).stores


@pytest.mark.parametrize("store", LM_FREE_STORES)
def test_write_read_save_load_every_store(store, hash_resources, tmp_path):
    retrieve = "graph" if store == "graph" else "hybrid"
    arch = Architecture(("trajectory",), store, retrieve, "lightweight")
    program = MemoryProgram(arch, resources=hash_resources, top_k=3)
    for i, obj in enumerate(["apple", "tomato", "potato"]):
        assert program.write(kitchen(i, obj))
    r = program.read(Query("put a clean egg in the fridge"))
    assert 0 < len(r.items) <= 3 and r.context
    for s in r.items:
        assert s.item.kind == "trajectory" and s.item.episode_id.startswith("ep") and s.item.source_ids
        assert any(e.action == "created" for e in s.item.lineage)
    path = program.save(tmp_path / "p.json")
    data = json.loads(path.read_text())  # JSON, not pickle
    assert data["architecture"]["store"] == store
    again = MemoryProgram.load(path, resources=hash_resources)
    r2 = again.read(Query("put a clean egg in the fridge"))
    assert r2.ids() == r.ids()
    assert [s.item.to_dict() for s in r2.items] == [s.item.to_dict() for s in r.items]


def test_never_returns_items_of_the_episode_being_answered(hash_resources):
    program = MemoryProgram(Architecture(("trajectory",), "json", "hybrid", "lightweight"), resources=hash_resources)
    for i, obj in enumerate(["apple", "tomato"]):
        program.write(kitchen(i, obj))
    r = program.read(Query("put a clean apple in the fridge", episode_id="ep0"))
    assert r.items and all(s.item.episode_id != "ep0" for s in r.items)


def test_budget_and_top_k_honoured(hash_resources):
    program = MemoryProgram(Architecture(("turn",), "json", "hybrid", "lightweight"),
                            resources=hash_resources, top_k=5)
    for i in range(1, 8):
        program.write(session(i))
    r = program.read(Query("When did Caroline go hiking?", namespace="conv"), context_budget=25)
    assert r.trace["words_used"] <= 25 and len(r.items) <= 5
    assert program.read(Query("hiking", namespace="other")).items == []  # namespaces never leak


def test_forward_inside_dspy(hash_resources):
    program = MemoryProgram(Architecture(("turn",), "json", "mmr", "lightweight"), resources=hash_resources)
    program.write(session(1))
    pred = program(query="hiking in the mountains", namespace="conv")
    assert "hiking" in pred.context


def test_invalid_architecture_and_corrupt_saves(hash_resources, tmp_path):
    with pytest.raises(MemarchError):
        MemoryProgram(Architecture(("trajectory",), "json", "graph", "lightweight"), resources=hash_resources)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(DataError, match="malformed JSON"):
        MemoryProgram.load(bad, resources=hash_resources)
    bad.write_text(json.dumps({"format": "memarch.program/1", "architecture": {"encode": ["x"]}}))
    with pytest.raises(DataError):
        MemoryProgram.load(bad, resources=hash_resources)
    with pytest.raises(DataError, match="not a saved memarch program"):
        bad.write_text("[1, 2]")
        MemoryProgram.load(bad, resources=hash_resources)


def test_save_does_not_clobber_on_failure(hash_resources, tmp_path, monkeypatch):
    program = MemoryProgram(Architecture(("trajectory",), "json", "hybrid", "lightweight"), resources=hash_resources)
    program.write(kitchen(0, "apple"))
    path = program.save(tmp_path / "p.json")
    before = path.read_text()

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(program, "_memory_state", boom)
    with pytest.raises(RuntimeError):
        program.save(path)
    assert path.read_text() == before


@pytest.mark.parametrize("embedder", ["hash", "e5-small", "all-MiniLM-L6-v2-onnx-int8", "/models/my-local-model"])
def test_a_loaded_program_reads_with_the_embedder_its_memory_was_embedded_with(embedder):
    data = {"format": "memarch.program/1", "architecture": {"encode": ["turn"], "store": "vector",
                                                           "retrieve": "hybrid", "manage": "lightweight"},
            "top_k": 4, "embedder": embedder}
    program = MemoryProgram.from_dict(data)
    assert program.resources.embedder.model == embedder  # not the default MiniLM: no silent mismatch

"""A saved program records the defaults of the knobs it leaves unset, so a later release that changes
a default does not change the program: loading keeps the saved value (one warning line naming it),
an explicit config value is never overridden, a knob that no longer exists is named, and files saved
before the record load as they did."""
from __future__ import annotations

import json
import logging

import pytest

from memarch.errors import DataError
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.program import MemoryProgram

ARCH = Architecture(("turn",), "vector", "session", "lightweight", params={"retrieve.sessions": 4})


def _saved(hash_resources, tmp_path, **kw):
    program = MemoryProgram(ARCH, resources=hash_resources, **kw)
    path = program.save(tmp_path / "p.json")
    return program, json.loads(path.read_text())


def test_the_record_is_todays_defaults_of_the_unset_knobs(hash_resources, tmp_path):
    program, data = _saved(hash_resources, tmp_path)
    defaults = data["knob_defaults"]
    assert defaults["retrieve.dense_weight"] == program.retriever.settings["dense_weight"] == 0.8
    assert "retrieve.sessions" not in defaults  # set by the architecture
    assert "retrieve.top_k" not in defaults  # the program's own (saved as top_k)
    assert defaults["manage.dedup_threshold"] == 0.98  # the conversation family's default
    loaded = MemoryProgram.load(tmp_path / "p.json", resources=hash_resources)
    assert loaded.pinned_defaults == {} and loaded.retriever.settings == program.retriever.settings


def test_a_default_changed_since_the_save_keeps_the_saved_value(hash_resources, tmp_path, caplog):
    _, data = _saved(hash_resources, tmp_path)
    data["knob_defaults"]["retrieve.dense_weight"] = 1.0  # as saved when the default was 1.0
    data["knob_defaults"]["manage.dedup_threshold"] = 0.95
    (tmp_path / "old.json").write_text(json.dumps(data))
    with caplog.at_level(logging.WARNING, logger="memarch.pipeline.program"):
        loaded = MemoryProgram.load(tmp_path / "old.json", resources=hash_resources)
    assert loaded.retriever.settings["dense_weight"] == 1.0
    assert loaded.manager.setting("dedup_threshold", loaded.store, "default") == 0.95
    assert loaded.pinned_defaults == {"retrieve.dense_weight": 1.0, "manage.dedup_threshold": 0.95}
    assert loaded.architecture == MemoryProgram(ARCH, resources=hash_resources).architecture  # same point
    [line] = [r.getMessage() for r in caplog.records]
    assert "retrieve.dense_weight defaulted to 1.0 (today 0.8)" in line and "kept" in line
    # Saved again, the kept values are explicit: a third load needs no pinning and warns no more.
    loaded.save(tmp_path / "again.json")
    again = json.loads((tmp_path / "again.json").read_text())
    assert again["config"]["retriever"]["dense_weight"] == 1.0 and "retrieve.dense_weight" not in again["knob_defaults"]
    assert MemoryProgram.load(tmp_path / "again.json", resources=hash_resources).retriever.settings["dense_weight"] == 1.0


def test_an_explicit_config_value_wins_and_is_not_recorded_as_a_default(hash_resources, tmp_path):
    _, data = _saved(hash_resources, tmp_path, config={"retriever": {"dense_weight": 2.0}})
    assert "retrieve.dense_weight" not in data["knob_defaults"]
    data["knob_defaults"]["retrieve.dense_weight"] = 1.0  # a hand-edited file cannot override it
    (tmp_path / "edited.json").write_text(json.dumps(data))
    loaded = MemoryProgram.load(tmp_path / "edited.json", resources=hash_resources)
    assert loaded.retriever.settings["dense_weight"] == 2.0 and loaded.pinned_defaults == {}


def test_a_knob_that_no_longer_exists_is_named(hash_resources, tmp_path, caplog):
    _, data = _saved(hash_resources, tmp_path)
    data["knob_defaults"]["retrieve.gone_knob"] = 3
    (tmp_path / "gone.json").write_text(json.dumps(data))
    with caplog.at_level(logging.WARNING, logger="memarch.pipeline.program"):
        MemoryProgram.load(tmp_path / "gone.json", resources=hash_resources)
    assert any("retrieve.gone_knob" in r.getMessage() for r in caplog.records)


def test_files_from_before_the_record_load_as_before(hash_resources, tmp_path):
    program, data = _saved(hash_resources, tmp_path)
    del data["knob_defaults"]
    (tmp_path / "older.json").write_text(json.dumps(data))
    loaded = MemoryProgram.load(tmp_path / "older.json", resources=hash_resources)
    assert loaded.pinned_defaults == {} and loaded.retriever.settings == program.retriever.settings
    data["knob_defaults"] = [1, 2]
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(DataError, match="knob_defaults must be an object"):
        MemoryProgram.load(tmp_path / "bad.json", resources=hash_resources)

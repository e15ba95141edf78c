"""`MemoryItem.to_dict` and `Episode.to_dict` are built by hand for speed: they must give exactly
what ``dataclasses.asdict`` gives (keys, order, values) and never share a mutable value."""
from __future__ import annotations

import dataclasses
import json

from memarch.pipeline.episodes import Episode, Step, Turn
from memarch.pipeline.items import MemoryItem


def _item() -> MemoryItem:
    item = MemoryItem(text="Ana works at the bakery", kind="fact", episode_id="e1", source_ids=["e1:0"],
                      fields={"subject": "Ana", "tags": ["job", {"since": 2024}], "n": 3}, key="ana|job",
                      event_time="2026-05-03", namespace="ana")
    item.log("created", "encoder:fact", "", [], "2026-05-03")
    item.log("merged_from", "manager:lightweight", "duplicate write", ["fact-1"], "2026-05-04",
             similarity=0.99, texts=["Ana works at a bakery"])
    item.usage.retrieved = 2
    return item


def test_item_to_dict_is_asdict():
    item = _item()
    fast, slow = item.to_dict(), dataclasses.asdict(item)
    assert fast == slow and json.dumps(fast) == json.dumps(slow)  # same key order too
    assert MemoryItem.from_dict(fast) == item


def test_item_to_dict_copies_nested_values():
    item = _item()
    d = item.to_dict()
    d["fields"]["tags"][1]["since"] = 1999
    d["lineage"][1]["data"]["texts"].append("x")
    d["source_ids"].append("e9:9")
    assert item.fields["tags"][1]["since"] == 2024
    assert item.lineage[1].data["texts"] == ["Ana works at a bakery"] and item.source_ids == ["e1:0"]


def test_episode_to_dict_is_asdict():
    ep = Episode(id="e1", task="cook", steps=[Step("s0", "open fridge", "it is open", {"k": [1]})],
                 turns=[Turn("e1:0", "ana", "hi", "2026-05-03", {"img": {"caption": "a cat"}})],
                 outcome="success", time="2026-05-03T10:00:00", namespace="ana", metadata={"session": 1})
    fast, slow = ep.to_dict(), dataclasses.asdict(ep)
    assert fast == slow and json.dumps(fast) == json.dumps(slow)
    fast["turns"][0]["metadata"]["img"]["caption"] = "changed"
    assert ep.turns[0].metadata["img"]["caption"] == "a cat"
    assert Episode.from_dict(fast).steps == ep.steps


def test_memory_record_to_dict_is_asdict():
    from memarch.app.records import MemoryRecord

    record = MemoryRecord.of(_item(), score=0.5)
    fast, slow = record.to_dict(), dataclasses.asdict(record)
    assert fast == slow and json.dumps(fast) == json.dumps(slow)
    fast["lineage"][1]["data"]["texts"].append("x")
    fast["fields"]["tags"].append("y")
    assert record.lineage[1]["data"]["texts"] == ["Ana works at a bakery"] and record.fields["tags"][-1] != "y"

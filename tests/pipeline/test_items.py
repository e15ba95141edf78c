"""MemoryItem provenance and lineage survive serialisation; caches are shared across processes."""
from __future__ import annotations

import subprocess
import sys

import numpy as np

from memarch.pipeline.cache import DiskCache
from memarch.pipeline.embed import Embedder
from memarch.pipeline.episodes import Episode, Step, Turn
from memarch.pipeline.items import MemoryItem, make_item_id


def _item() -> MemoryItem:
    it = MemoryItem(text="Caroline works as a counselor", kind="fact", fields={"subject": "Caroline"},
                    episode_id="conv1/s3", source_ids=["D3:4", "D3:5"], outcome="unknown",
                    event_time="2023-05-08", namespace="conv1", key="caroline|job")
    it.log("superseded_by", "manager:json_full", "newer fact", related=["x"], at="2023-06-01")
    it.usage.retrieved = 3
    return it


def test_item_roundtrip_keeps_everything():
    it = _item()
    back = MemoryItem.from_dict(it.to_dict())
    assert back == it
    assert back.lineage[0].related == ["x"] and back.usage.retrieved == 3


def test_deterministic_ids():
    assert make_item_id("tip", "e1", "x") == make_item_id("tip", "e1", "x")
    assert make_item_id("tip", "e1", "x") != make_item_id("tip", "e2", "x")


def test_episode_hash_ignores_namespace():
    a = Episode("e", task="t", steps=[Step("s1", "go")], namespace="u1")
    b = Episode("e", task="t", steps=[Step("s1", "go")], namespace="u2")
    assert a.content_hash() == b.content_hash()
    assert Episode.from_dict(a.to_dict()) == a
    assert Episode("c", turns=[Turn("D1:1", "A", "hi")]).family == "conversation"


def test_hash_embedder_is_deterministic_and_normalised(tmp_path):
    e = Embedder("hash", cache_dir=tmp_path)
    v = e.embed(["the cat sat", "the cat sat", "a dog ran"])
    assert v.shape == (3, 384)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert np.allclose(v[0], v[1]) and not np.allclose(v[0], v[2])


def test_embedding_cache_is_shared_across_processes(tmp_path):
    code = ("import sys; from memarch.pipeline.embed import Embedder; "
            f"e=Embedder('hash', cache_dir={str(tmp_path)!r}); e.embed(['one','two']); print(e.computed)")
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert first.stdout.strip() == "2" and second.stdout.strip() == "0"


def test_disk_cache_many(tmp_path):
    c = DiskCache(tmp_path / "c.sqlite")
    c.set_many({f"k{i}": str(i).encode() for i in range(2000)})
    got = c.get_many([f"k{i}" for i in range(0, 2100, 7)])
    assert len(got) == len(range(0, 2000, 7)) and len(c) == 2000
    c.set_json("j", {"a": [1, 2]})
    assert c.get_json("j") == {"a": [1, 2]}

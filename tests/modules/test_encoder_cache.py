"""The encoder output cache: keyed by (encoder, config, instructions, episode content, LM id),
shared on disk by several processes, and transparent to cross-episode mining."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import dspy
from dspy.utils.dummies import DummyLM

from memarch.modules.encoders.shortcut import ShortcutEncoder
from memarch.modules.encoders.trajectory import TrajectoryEncoder
from memarch.pipeline.embed import Embedder
from memarch.pipeline.episodes import Episode, Step
from memarch.pipeline.resources import Resources

ROOT = Path(__file__).resolve().parents[2]


def kitchen(eid: str, obj: str) -> Episode:
    acts = [("go to fridge", "You arrive at the fridge."), (f"take {obj} from fridge", f"You can't see any {obj}."),
            ("open fridge", f"You open the fridge. You see a {obj}."), (f"take {obj} from fridge", f"You take the {obj}."),
            ("go to counter", "You see a knife."), (f"slice {obj} with knife", f"You slice the {obj}.")]
    return Episode(id=eid, task=f"slice the {obj}", outcome="success",
                   steps=[Step(f"s{i}", a, o) for i, (a, o) in enumerate(acts, 1)])


# A child process: encode the episodes of a JSON file with an encoder that counts LM-free calls.
CHILD = textwrap.dedent("""
    import json, sys
    from memarch.modules.encoders.trajectory import TrajectoryEncoder
    from memarch.pipeline.embed import Embedder
    from memarch.pipeline.episodes import Episode
    from memarch.pipeline.resources import Resources

    class Counting(TrajectoryEncoder):
        calls = 0
        def encode_free(self, episode):
            Counting.calls += 1
            return super().encode_free(episode)

    cache_dir, path = sys.argv[1], sys.argv[2]
    res = Resources(embedder=Embedder("hash", cache_dir=cache_dir), cache_dir=cache_dir)
    enc = Counting(res)
    items = [it.to_dict() for d in json.load(open(path)) for it in enc.encode(Episode.from_dict(d))]
    print(json.dumps({"calls": Counting.calls, "hits": res.encoder_cache.hits,
                      "misses": res.encoder_cache.misses, "items": items}))
""")


def run_children(tmp_path: Path, episodes: list[Episode], n: int = 1) -> list[dict]:
    path = tmp_path / "episodes.json"
    path.write_text(json.dumps([e.to_dict() for e in episodes]))
    cmd = [sys.executable, "-c", CHILD, str(tmp_path / "cache"), str(path)]
    procs = [subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(n)]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=120)
        assert p.returncode == 0, stderr
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def test_cache_miss_then_hit_across_processes(tmp_path):
    eps = [kitchen(f"e{i}", obj) for i, obj in enumerate(["apple", "tomato", "leek", "fig"])]
    [first] = run_children(tmp_path, eps[:2])
    assert first["calls"] == 2 and first["misses"] == 2 and first["hits"] == 0
    # two processes at once on the same cache: the first process's outputs are hits, the new
    # episodes are encoded (by one or both), and no write is lost or corrupted
    second = run_children(tmp_path, eps, n=2)
    for r in second:
        assert r["hits"] >= 2 and r["calls"] + r["hits"] == 4 and r["calls"] <= 2
        assert r["items"][:2] == first["items"]
    assert second[0]["items"] == second[1]["items"]
    res = Resources(embedder=Embedder("hash", cache_dir=tmp_path), cache_dir=tmp_path / "cache")
    assert len(res.encoder_cache) == 4
    again = [it.to_dict() for e in eps for it in TrajectoryEncoder(res).encode(e)]
    assert res.encoder_cache.hits == 4 and res.encoder_cache.misses == 0 and again == second[0]["items"]


def test_cache_key_depends_on_config_instructions_content_and_lm(tmp_path):
    res = Resources(embedder=Embedder("hash", cache_dir=tmp_path), cache_dir=tmp_path)
    ep = kitchen("e1", "apple")
    base = TrajectoryEncoder(res).cache_key(ep)
    assert TrajectoryEncoder(res).cache_key(ep) == base
    assert TrajectoryEncoder(res, max_steps=3).cache_key(ep) != base
    changed = TrajectoryEncoder(res)
    changed.compress.signature = changed.compress.signature.with_instructions("Be terse.")
    assert changed.cache_key(ep) != base
    other = kitchen("e1", "apple")
    other.steps[0].action = "walk to fridge"
    assert TrajectoryEncoder(res).cache_key(other) != base
    moved = kitchen("e1", "apple")
    moved.namespace = "user-2"  # where it is stored is not content
    assert TrajectoryEncoder(res).cache_key(moved) == base
    assert ShortcutEncoder(res).cache_key(ep) != base
    res.lm = DummyLM([], adapter=dspy.JSONAdapter())
    assert TrajectoryEncoder(res).cache_key(ep) != base


def test_cached_output_follows_the_episode_namespace(tmp_path):
    res = Resources(embedder=Embedder("hash", cache_dir=tmp_path), cache_dir=tmp_path)
    ep = kitchen("e1", "apple")
    [a] = TrajectoryEncoder(res).encode(ep)
    ep.namespace = "user-2"
    [b] = TrajectoryEncoder(res).encode(ep)
    assert res.encoder_cache.hits == 1 and b.namespace == "user-2" and a.namespace == "default"
    assert b.text == a.text and b.id == a.id


def test_mining_still_works_when_every_episode_is_a_cache_hit(tmp_path):
    res = Resources(embedder=Embedder("hash", cache_dir=tmp_path), cache_dir=tmp_path)
    eps = [kitchen("e1", "apple"), kitchen("e2", "tomato")]
    warm = ShortcutEncoder(res)
    mined = [it for e in eps for it in warm.encode(e)]
    hits = res.encoder_cache.hits
    cold = ShortcutEncoder(res)  # a new trial sharing the encoder: no re-encoding
    again = [it for e in eps for it in cold.encode(e)]
    assert res.encoder_cache.hits == hits + 2
    assert len(mined) == 1 and [m.to_dict() for m in again] == [m.to_dict() for m in mined]

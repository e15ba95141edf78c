"""LM-free encoding throughput of the conversation encoders over every LoCoMo turn and the bAbI
stories: a cold encoder cache (fresh directory) against a warm one (same directory again).

Usage: python benchmarks/bench_encoders.py --data ../shared/data [--babi-stories N]
"""
from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memarch.pipeline.embed import Embedder  # noqa: E402
from memarch.pipeline.episodes import Episode, Turn  # noqa: E402
from memarch.pipeline.registry import REGISTRY  # noqa: E402
from memarch.pipeline.resources import Resources  # noqa: E402

ENCODERS = ("turn", "summary", "fact", "entity", "event")
_BABI_LINE = re.compile(r"(\d+) (.*)")


def locomo_sessions(data: Path) -> list[Episode]:
    """Every LoCoMo session; the official loader when it is there, else a minimal parse."""
    try:
        from memarch.benchmarks.locomo import LoCoMo

        return [s for d in LoCoMo(data / "locomo").dialogues for s in d.sessions]
    except ImportError:
        pass
    raw = json.loads((data / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    out = []
    for conv in raw:
        c = conv["conversation"]
        for key, turns in c.items():
            if key.startswith("session_") and isinstance(turns, list):
                out.append(Episode(f"{conv['sample_id']}/{key}", time=c.get(f"{key}_date_time"), turns=[
                    Turn(t["dia_id"], t["speaker"], t["text"],
                         metadata={"blip_caption": t["blip_caption"]} if "blip_caption" in t else {})
                    for t in turns]))
    return out


def babi_sessions(data: Path, stories: int | None) -> list[Episode]:
    """bAbI test stories cut into sessions at each question (the story so far is what memory sees)."""
    try:
        from memarch.benchmarks.babi import BAbI

        return [s for d in BAbI(data / "babi", stories=stories).dialogues for s in d.sessions]
    except ImportError:
        pass
    out = []
    for path in sorted((data / "babi" / "en").glob("qa*_test.txt")):
        story, block, kept = -1, [], 0
        for line in path.read_text(encoding="utf-8").splitlines():
            m = _BABI_LINE.fullmatch(line.strip())
            if not m:
                continue
            num, body = int(m.group(1)), m.group(2)
            if num == 1:
                story, block = story + 1, []
                if stories is not None and story >= stories:
                    break
            if "\t" in body:
                if block:
                    out.append(Episode(f"{path.stem}-{story}/s{kept}", turns=block))
                    kept += 1
                block = []
            else:
                block.append(Turn(f"L{num}", "story", body.strip()))
    return out


def run(episodes: list[Episode], cache_dir: Path) -> tuple[int, float, dict[str, float]]:
    """Encode every episode with every encoder; (items, seconds, seconds per encoder)."""
    res = Resources(embedder=Embedder("hash", cache_dir=cache_dir), cache_dir=cache_dir)
    per: dict[str, float] = {}
    items = 0
    for name in ENCODERS:
        encoder = REGISTRY.get("encoder", name).cls(res)
        t0 = time.perf_counter()
        for ep in episodes:
            items += len(encoder.encode(ep))
        per[name] = time.perf_counter() - t0
    return items, sum(per.values()), per


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    ap.add_argument("--babi-stories", type=int, default=None, help="first N stories of each task (default all)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    data = Path(args.data).resolve()
    corpora = {"locomo": locomo_sessions(data), "babi": babi_sessions(data, args.babi_stories)}
    print(f"{'corpus':8} {'sessions':>8} {'turns':>7} {'items':>7} {'cold s':>7} {'cold it/s':>10} "
          f"{'warm s':>7} {'warm it/s':>10} {'cold/warm':>9}")
    for name, episodes in corpora.items():
        turns = sum(len(e.turns) for e in episodes)
        with tempfile.TemporaryDirectory(prefix="bench-enc-") as tmp:
            items, cold, per_cold = run(episodes, Path(tmp))
            items_warm, warm, per_warm = run(episodes, Path(tmp))
        if items_warm != items:
            print(f"{name}: warm run returned {items_warm} items, cold {items}", file=sys.stderr)
            return 1
        print(f"{name:8} {len(episodes):8d} {turns:7d} {items:7d} {cold:7.2f} {items / cold:10.0f} "
              f"{warm:7.2f} {items / warm:10.0f} {cold / warm:8.1f}x")
        print("   per encoder cold/warm s: " + ", ".join(
            f"{e} {per_cold[e]:.2f}/{per_warm[e]:.2f}" for e in ENCODERS))
    return 0


if __name__ == "__main__":
    sys.exit(main())

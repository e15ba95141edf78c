"""LM-free encoding throughput of the conversation encoders over every LoCoMo turn and the bAbI
stories: a cold encoder cache (fresh directory) against a warm one (same directory again); then
what the items hold for LoCoMo questions (evidence turns cited, temporal dates resolved).

Usage: python benchmarks/bench_encoders.py --data ../shared/data [--babi-stories N (0 = all)]
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


def locomo_quality(data: Path, cache_dir: Path) -> None:
    """What the LM-free items hold for LoCoMo questions (categories 1-4): the share of gold evidence
    turns some item of each encoder cites, and, for temporal questions whose gold answer is a plain
    calendar day, the share with an event item on an evidence turn resolved to exactly that day."""
    try:
        from memarch.benchmarks.locomo import LoCoMo
    except ImportError:
        print("(LoCoMo loader not available: quality table skipped)")
        return
    from memarch.pipeline.dates import parse_session_date

    res = Resources(embedder=Embedder("hash", cache_dir=cache_dir), cache_dir=cache_dir)
    encoders = {n: REGISTRY.get("encoder", n).cls(res) for n in ENCODERS}
    cited = {n: 0 for n in ENCODERS}
    evidence = dated = dated_hit = 0
    relative = re.compile(r"before|after|week|between|few|since|until", re.IGNORECASE)
    for dialogue in LoCoMo(data / "locomo").dialogues:
        items = {n: [it for s in dialogue.sessions for it in e.encode(s)] for n, e in encoders.items()}
        ids = {n: {i for it in its for i in it.source_ids} for n, its in items.items()}
        event_days: dict[str, set[str]] = {}
        for it in items["event"]:
            for i in it.source_ids:
                event_days.setdefault(i, set()).add(it.fields.get("date"))
        for q in dialogue.questions:
            if not q.evidence or not q.answer or q.category == "adversarial":
                continue
            evidence += len(q.evidence)
            for n in ENCODERS:
                cited[n] += sum(e in ids[n] for e in q.evidence)
            gold = None if relative.search(q.answer) else parse_session_date(" ".join(q.answer.replace(",", " ").split()))
            if q.category == "temporal" and gold is not None:
                dated += 1
                dated_hit += any(gold.isoformat() in event_days.get(e, ()) for e in q.evidence)
    print("LoCoMo evidence turns cited by an item: " + ", ".join(f"{n} {cited[n] / evidence:.3f}" for n in ENCODERS)
          + f" (of {evidence})")
    print(f"LoCoMo temporal questions with a plain-date answer: {dated}; event item resolved to that day: "
          f"{dated_hit} ({dated_hit / max(dated, 1):.3f})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    # All 20 x 1000 test stories (17,576 sessions) take minutes on a shared machine; 25 per task
    # (about 2,000 sessions) measure the same per-item rates in seconds.
    ap.add_argument("--babi-stories", type=int, default=25,
                    help="first N stories of each bAbI task (default 25; 0 = all)")
    args = ap.parse_args()
    args.babi_stories = args.babi_stories or None
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
    with tempfile.TemporaryDirectory(prefix="bench-enc-") as tmp:
        locomo_quality(data, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())

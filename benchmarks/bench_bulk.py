"""Bulk import (issue 21, goal >= 5,000 items/s with the hash embedder, equal memory to one-by-one
adds): `Memory.add_many` side by side with one `add` / `add_episode` per session, in one run.

    python benchmarks/bench_bulk.py [--data ../shared/data] [--synthetic 100000] [--one-by-one 5000]
                                    [--embedder hash] [--arch turn,vector,hybrid,lightweight]

1. LoCoMo (every session of the 10 conversations, ~5.9k turns): `import_file` (add_many, batches
   of 256) and one `add_episode` per session, each into a fresh memory; items/s of both, and
   whether the two memories are equal (every item's dict per user, and the top-5 ids and scores of
   a question per conversation).
2. Synthetic chat messages (``--synthetic`` of them, one message per session, 16 users):
   add_many over all, one `add` each over the first ``--one-by-one``; items/s of both.
Items/s counts items kept (after the manager). The machine's load average is printed with them.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from memarch import Architecture, Memory  # noqa: E402
from memarch.app.importing import import_file, read_sessions  # noqa: E402
from memarch.pipeline.embed import Embedder  # noqa: E402
from memarch.pipeline.program import MemoryProgram  # noqa: E402
from memarch.pipeline.resources import Resources  # noqa: E402

GOAL = 5000.0
_WORDS = [f"{w}{i}" for w in ("lisbon", "bakery", "cello", "dog", "garden", "kayak", "novel", "sister")
          for i in range(400)]


def program_file(tmp: Path, arch: Architecture, embedder: str) -> Path:
    path = tmp / "program.json"
    MemoryProgram(arch, resources=Resources(embedder=Embedder(embedder))).save(path, include_memory=False)
    return path


def state(memory: Memory, users: list[str], questions: dict[str, str]) -> dict:
    items = {u: [r.to_dict() for r in memory.get_all(user_id=u, include_deleted=True)] for u in users}
    hits = {u: [(h.id, round(h.score, 6)) for h in memory.search(q, user_id=u, limit=5)] for u, q in questions.items()}
    return {"items": items, "hits": hits}


def locomo(data: Path, program: Path, tmp: Path) -> None:
    source = data / "locomo" / "locomo10.json"
    if not source.is_file():
        print(f"LoCoMo: skipped (no {source})")
        return
    sessions = read_sessions(source, "locomo")
    users = list(dict.fromkeys(ep.namespace for ep in sessions))
    questions = {u: "What did they talk about last time?" for u in users}
    with Memory.load(program, path=tmp / "locomo-bulk") as bulk:
        t0 = time.perf_counter()
        out = import_file(bulk, source, "locomo")
        t_bulk = time.perf_counter() - t0
        a = state(bulk, users, questions)
    with Memory.load(program, path=tmp / "locomo-one") as one:
        t0 = time.perf_counter()
        kept = sum(len(one.add_episode(ep)) for ep in sessions)
        t_one = time.perf_counter() - t0
        b = state(one, users, questions)
    print(f"LoCoMo: {len(sessions)} sessions, {out['items']} items kept (one by one: {kept})")
    print(f"  add_many     {out['items'] / t_bulk:8.0f} items/s  ({t_bulk:.1f} s)")
    print(f"  add_episode  {kept / t_one:8.0f} items/s  ({t_one:.1f} s)   ratio {t_one / t_bulk:.2f}x")
    print(f"  equal memory (items of every user, top-5 ids and scores): {a == b}")


def synthetic(n: int, one_by_one: int, program: Path, tmp: Path) -> None:
    rng = random.Random(0)
    sessions = [{"messages": f"msg {i}: I met {rng.choice(_WORDS)} near the {rng.choice(_WORDS)} "
                             f"and talked about {rng.choice(_WORDS)}", "user_id": f"u{i % 16}",
                 "timestamp": f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}"} for i in range(n)]
    with Memory.load(program, path=tmp / "syn-bulk") as bulk:
        t0 = time.perf_counter()
        kept = sum(len(k) for k in bulk.add_many(sessions))
        t_bulk = time.perf_counter() - t0
    with Memory.load(program, path=tmp / "syn-one") as one:
        t0 = time.perf_counter()
        kept_one = sum(len(one.add(s["messages"], user_id=s["user_id"], timestamp=s["timestamp"]))
                       for s in sessions[:one_by_one])
        t_one = time.perf_counter() - t0
    print(f"synthetic: {n} one-message sessions, 16 users")
    print(f"  add_many     {kept / t_bulk:8.0f} items/s  ({t_bulk:.1f} s for {kept} items)")
    print(f"  add          {kept_one / t_one:8.0f} items/s  ({t_one:.1f} s for the first {one_by_one})"
          f"   ratio {(kept / t_bulk) / (kept_one / t_one):.2f}x")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="../shared/data")
    p.add_argument("--synthetic", type=int, default=100_000, help="synthetic messages for add_many (0: skip)")
    p.add_argument("--one-by-one", type=int, default=5000, help="of them, added one by one for the ratio")
    p.add_argument("--embedder", default="hash")
    p.add_argument("--arch", default="turn,vector,hybrid,lightweight", help="encoder,store,retriever,manager")
    args = p.parse_args(argv)
    enc, store, ret, man = args.arch.split(",")
    arch = Architecture((enc,), store, ret, man)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        program = program_file(tmp, arch, args.embedder)
        print(f"{arch.key()}, embedder {args.embedder}; load average {os.getloadavg()[0]:.2f} at start")
        locomo(Path(args.data), program, tmp)
        if args.synthetic:
            synthetic(args.synthetic, min(args.one_by_one, args.synthetic), program, tmp)
    print(f"goal: >= {GOAL:.0f} items/s (hash embedder); load average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`memarch.Memory` as a chat app uses it: add one message, then search, for one user holding 10k and
100k items, with every LM-free store (turn encoder, hybrid retriever, a manager). Whole-stack
latency — SQLite commit, encoder, manager, store, retriever — measured side by side in one run.

    python benchmarks/bench_memory_app.py [--sizes 10000,100000] [--stores json,vector,hybrid,graph]
                                          [--managers lightweight] [--turns 100]

Embeddings come from the feature-hashing embedder so the figures are the memory's own cost; the
real embedding model adds its per-message cost, printed on the last line (``--no-model`` skips it).
Memory is filled through ``Memory.add`` in sessions of ``--fill-batch`` messages (one transaction
each), then ``--turns`` single-message adds each followed by a search are timed.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from memarch.pipeline.architecture import Architecture  # noqa: E402
from memarch.pipeline.embed import Embedder  # noqa: E402
from memarch.pipeline.resources import Resources  # noqa: E402

TARGET_P95_MS = 20.0
_TOPICS = ("moved to", "started a job at", "adopted a", "is learning", "visited", "bought a", "met", "plays")
_NOUNS = [f"{w}{i}" for w in ("lisbon", "bakery", "cello", "dog", "garden", "kayak", "novel", "sister")
          for i in range(400)]


def message(rng: random.Random) -> str:
    """A short chat message about a few of ~3k entities (enough distinct text that nothing dedups)."""
    return (f"I {rng.choice(_TOPICS)} {rng.choice(_NOUNS)} with {rng.choice(_NOUNS)} "
            f"on day {rng.randrange(10_000)} near {rng.choice(_NOUNS)}.")


def _pct(ms: list[float]) -> tuple[float, float]:
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 95))


def run_one(store: str, manager: str, size: int, turns: int, fill_batch: int, seed: int) -> dict:
    """Fill one user's memory to ``size`` items, then time ``turns`` add -> search pairs."""
    from memarch import Memory

    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="memarch-bench-app-") as tmp:
        resources = Resources(embedder=Embedder("hash", cache_dir=tmp), cache_dir=tmp)
        arch = Architecture(("turn",), store, "hybrid", manager)
        memory = Memory.load(arch, path=Path(tmp) / "mem", resources=resources)
        t0 = time.perf_counter()
        while memory.count(user_id="u") < size:
            need = min(fill_batch, size - memory.count(user_id="u"))
            memory.add([{"role": "user", "content": message(rng)} for _ in range(need)], user_id="u")
        fill_s = time.perf_counter() - t0
        items = memory.count(user_id="u")
        memory.search(message(rng), user_id="u", limit=5)  # first read builds the read caches, off the clock
        adds, searches, pairs = [], [], []
        for _ in range(turns):
            a0 = time.perf_counter()
            memory.add(message(rng), user_id="u")
            a1 = time.perf_counter()
            memory.search(message(rng), user_id="u", limit=5)
            a2 = time.perf_counter()
            adds.append((a1 - a0) * 1e3)
            searches.append((a2 - a1) * 1e3)
            pairs.append((a2 - a0) * 1e3)
        memory.close()
    return {"store": store, "manager": manager, "size": items, "fill_per_s": items / fill_s,
            "add": _pct(adds), "search": _pct(searches), "pair": _pct(pairs)}


def model_embed_ms(n: int = 50) -> float | None:
    """p50 ms to embed one message with the bundled model (what the hash embedder leaves out)."""
    try:
        embedder = Embedder("all-MiniLM-L6-v2", cache_dir=tempfile.mkdtemp(prefix="memarch-bench-emb-"))
        rng = random.Random(1)
        embedder.embed([message(rng)])  # loads the model
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            embedder.embed([message(rng)])
            times.append((time.perf_counter() - t0) * 1e3)
        return _pct(times)[0]
    except Exception as exc:  # shown, never silent
        print(f"(embedding model not measured: {type(exc).__name__}: {exc})")
        return None


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--stores", default="json,vector,hybrid,graph")
    ap.add_argument("--managers", default="lightweight")
    ap.add_argument("--turns", type=int, default=100)
    ap.add_argument("--fill-batch", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-model", action="store_true", help="skip timing the real embedding model")
    ap.add_argument("--data", default=None, help="ignored (make bench passes it to every benchmark)")
    args = ap.parse_args(argv)
    rows = []
    print(f"{'items':>7} {'store':<7} {'manager':<12} {'fill/s':>8} {'add p50/p95':>14} "
          f"{'search p50/p95':>15} {'add+search p50/p95':>19}  (ms; load {os.getloadavg()[0]:.1f})")
    for size in [int(s) for s in args.sizes.split(",")]:
        for store in args.stores.split(","):
            for manager in args.managers.split(","):
                r = run_one(store, manager, size, args.turns, args.fill_batch, args.seed)
                rows.append(r)
                print(f"{r['size']:>7} {store:<7} {manager:<12} {r['fill_per_s']:>8.0f} "
                      f"{r['add'][0]:>6.1f} / {r['add'][1]:<6.1f} {r['search'][0]:>6.1f} / {r['search'][1]:<7.1f}"
                      f"{r['pair'][0]:>8.1f} / {r['pair'][1]:<8.1f}  (load {os.getloadavg()[0]:.1f})", flush=True)
    big = [r for r in rows if r["size"] == max(x["size"] for x in rows)]
    ok = [r for r in big if r["pair"][1] < TARGET_P95_MS]
    print(f"add -> search p95 < {TARGET_P95_MS:.0f} ms at {big[0]['size']} items: "
          f"{len(ok)}/{len(big)} store x manager ({', '.join(r['store'] + '/' + r['manager'] for r in ok) or 'none'})")
    if not args.no_model:
        ms = model_embed_ms()
        if ms is not None:
            print(f"the bundled embedding model adds {ms:.1f} ms p50 per message embedded (add and search each embed once)")
    return rows


if __name__ == "__main__":
    main()

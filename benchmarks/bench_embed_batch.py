"""Texts per second of the default embedder (all-MiniLM-L6-v2 on torch) by batch size and thread count,
on LoCoMo texts of the two lengths a compile embeds most: turns and 4-turn chunks (the turn encoder's
``window=4``). Each text list is sorted by length first, as the prefetch and the embedder's callers
batch them; ``use_cache=False``, so every vector is computed; the repeats interleave the settings so a
change in the machine's load hits them alike; best of --repeats. The vectors of every setting are
compared with the first one's (max absolute difference): a batch size changes float rounding only.

    .venv/bin/python benchmarks/bench_embed_batch.py --data ../shared/data --texts 600

Measured (issue 35) on this 2-core machine it is what set the prefetch's batch (`memarch.pipeline.prefetch`)
and the embedder's default batch size: docs/benchmarks.md, "A first compile in minutes".
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def locomo_texts(data: str, window: int, n: int) -> list[str]:
    from memarch.benchmarks import get_benchmark
    from memarch.benchmarks.evaluation.protocols import stream_schedule
    from memarch.modules.encoders.turn import TurnEncoder

    bench = get_benchmark("locomo", data=str(Path(data) / "locomo"))
    encoder = TurnEncoder(None, window=window)
    texts: dict[str, None] = {}
    for dialogue in bench.dialogues:
        for session, _ in stream_schedule(dialogue):
            items = encoder.encode_free(session)
            texts.update((i.text, None) for i in items if window == 1 or i.fields.get("unit") == "chunk")
            if len(texts) >= n:
                return sorted(list(texts)[:n], key=len)
    return sorted(texts, key=len)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--texts", type=int, default=600, help="texts of each length (default 600)")
    ap.add_argument("--batches", default="8,16,32,64,256")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args(argv)

    import numpy as np
    import torch

    from memarch.pipeline.embed import Embedder

    batches = [int(b) for b in args.batches.split(",")]
    threads = [int(t) for t in args.threads.split(",")]
    sets = {"turns": locomo_texts(args.data, 1, args.texts), "4-turn chunks": locomo_texts(args.data, 4, args.texts)}
    embedder = Embedder(use_cache=False)
    embedder.embed(["warm up"])
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}  torch {torch.__version__}  "
          f"texts: " + ", ".join(f"{k} {len(v)} (mean {np.mean([len(t.split()) for t in v]):.0f} words)"
                                 for k, v in sets.items()))
    best: dict[tuple, float] = {}
    first: dict[str, np.ndarray] = {}
    diff: dict[tuple, float] = {}
    for _ in range(args.repeats):
        for name, texts in sets.items():
            for t in threads:
                torch.set_num_threads(t)
                for b in batches:
                    embedder.batch_size = b
                    embedder._memo.clear()
                    start = time.perf_counter()
                    vecs = embedder.embed(texts)
                    rate = len(texts) / (time.perf_counter() - start)
                    best[name, t, b] = max(best.get((name, t, b), 0.0), rate)
                    ref = first.setdefault(name, vecs)
                    diff[name, t, b] = float(np.abs(vecs - ref).max())
    print(f"\n| texts | torch threads | " + " | ".join(f"batch {b}" for b in batches) + " | best / batch 256 |")
    print("|---|---|" + "---|" * len(batches) + "---|")
    for name in sets:
        for t in threads:
            row = [best[name, t, b] for b in batches]
            ratio = max(row) / best[name, t, 256] if 256 in batches else float("nan")
            print(f"| {name} | {t} | " + " | ".join(f"{r:.0f}/s" for r in row) + f" | {ratio:.2f}x |")
    print(f"\nmax |vector - first setting's| over every setting: {max(diff.values()):.2e}; "
          f"load after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

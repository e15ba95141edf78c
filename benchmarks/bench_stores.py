"""Store x retriever benchmark: write throughput and retrieve latency (p50 / p95) for every valid
LM-free store/retriever pair at 10k and 100k items, embeddings precomputed, printed as a table.

    python benchmarks/bench_stores.py [--sizes 10000,100000] [--quick] [--queries 100]

Targets (issue 2): retrieve p95 < 20 ms at 100k for vector, hybrid and mmr; writes >= 2,000 items/s.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from memarch.pipeline.embed import Embedder  # noqa: E402
from memarch.pipeline.episodes import Query  # noqa: E402
from memarch.pipeline.items import MemoryItem  # noqa: E402
from memarch.pipeline.registry import REGISTRY  # noqa: E402
from memarch.pipeline.resources import Resources  # noqa: E402
from memarch.pipeline.space import ArchitectureSpace  # noqa: E402

VERBS = "open close take put slice cook examine search read check move unlock fill heat wash inspect".split()
OBJECTS = ("fridge apple knife oven pan door key drawer cupboard table lamp book page map coin box letter "
           "bottle stove sink counter shelf carrot potato onion pepper milk egg bread cheese recipe").split()
PLACES = "kitchen cellar garden hallway pantry attic bedroom study library office garage porch".split()
ADJS = "red blue green old new small large rusty wooden metal sealed open closed hidden".split()
KINDS = ("tip", "insight", "trajectory", "workflow", "shortcut")
TARGET_P95_MS = 20.0
TARGET_WRITES = 2000.0


def corpus(n: int, seed: int = 0) -> list[MemoryItem]:
    """``n`` experience-like items: episodes of 3 items sharing a task, mixed kinds and outcomes."""
    rng = np.random.default_rng(seed)
    pick = lambda words: words[int(rng.integers(len(words)))]  # noqa: E731
    items = []
    for i in range(n):
        ep = i // 3
        task = f"{VERBS[ep % len(VERBS)]} the {OBJECTS[(ep * 7) % len(OBJECTS)]} task {ep % 997}"
        text = (f"{pick(VERBS)} the {pick(ADJS)} {pick(OBJECTS)} in the {pick(PLACES)} before you "
                f"{pick(VERBS)} the {pick(OBJECTS)}; note {i}")
        items.append(MemoryItem(text=text, kind=KINDS[i % len(KINDS)], episode_id=f"ep{ep}",
                                outcome=("success", "failure")[int(rng.integers(2))], fields={"task": task}))
    return items


def queries(n: int, n_items: int, seed: int = 1) -> list[Query]:
    rng = np.random.default_rng(seed)
    out = []
    for j in range(n):
        words = [VERBS[int(rng.integers(len(VERBS)))], OBJECTS[int(rng.integers(len(OBJECTS)))],
                 PLACES[int(rng.integers(len(PLACES)))]]
        # Every query answers for an existing episode, so the no-self-retrieval filter is exercised.
        out.append(Query(text=f"how to {words[0]} the {words[1]} in the {words[2]}",
                         episode_id=f"ep{int(rng.integers(max(1, n_items // 3)))}", id=f"q{j}"))
    return out


def valid_pairs() -> list[tuple[str, str]]:
    space = ArchitectureSpace("experience", lm_available=False)
    seen: dict[tuple[str, str], None] = {}
    for s, r, _ in space.triples():
        seen.setdefault((s, r), None)
    return list(seen)


def write(store_name: str, config: dict, resources: Resources, items: list[MemoryItem], vectors: np.ndarray,
          batch: int):
    store = REGISTRY.get("store", store_name).cls(resources, **config)
    t0, c0 = time.perf_counter(), time.process_time()
    for start in range(0, len(items), batch):
        store.add(items[start:start + batch], vectors=vectors[start:start + batch])
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return store, len(items) / wall, len(items) / max(cpu, 1e-9)


def read(retriever_name: str, resources: Resources, store, qs: list[Query], budget_s: float) -> dict:
    retriever = REGISTRY.get("retriever", retriever_name).cls(resources)
    t0 = time.perf_counter()
    retriever.retrieve(qs[0], store, top_k=4)  # builds per-version caches (BM25, case vectors, ...)
    first_ms = (time.perf_counter() - t0) * 1000
    times, cpu_times = [], []
    start = time.perf_counter()
    for q in qs[1:]:
        t, c = time.perf_counter(), time.process_time()
        got = retriever.retrieve(q, store, top_k=4)
        times.append((time.perf_counter() - t) * 1000)
        cpu_times.append((time.process_time() - c) * 1000)
        assert all(s.item.episode_id != q.episode_id for s in got.items), "self-retrieval"
        if time.perf_counter() - start > budget_s and len(times) >= 10:
            break
    arr = np.asarray(times)
    return {"first_ms": first_ms, "p50_ms": float(np.percentile(arr, 50)),
            "p95_ms": float(np.percentile(arr, 95)), "p95_cpu_ms": float(np.percentile(cpu_times, 95)),
            "n_queries": len(times)}


def recall_at(store, vectors: np.ndarray, qvecs: np.ndarray, k: int = 10) -> float:
    """Share of ``store.search``'s top-``k`` that belongs to the exact top-``k`` (brute force over the
    precomputed vectors); tie-aware: any item scoring at least the exact k-th score counts."""
    scores = qvecs @ vectors.T
    kth = -np.partition(-scores, k - 1, axis=1)[:, k - 1]
    hits = 0
    for q, row, bar in zip(qvecs, scores, kth):
        got = [int(it.id[1:]) for it, _ in store.search(q, k)]
        hits += sum(1 for j in got if row[j] >= bar - 1e-5)
    return hits / (k * len(qvecs))


def variants(pairs: list[tuple[str, str]], n: int) -> list[tuple[str, dict, str]]:
    """(store, config, label) to measure at size ``n``: every LM-free store with its defaults, plus
    the ``vector`` store with ``index="ivf"`` once it is large enough to switch to IVF."""
    # files: one fsync'd note file per item, made for agent notes; 100k files measure the disk
    out = [(s, {}, s) for s in dict.fromkeys(s for s, _ in pairs) if not (s == "files" and n > 10000)]
    if "vector" in {s for s, _, _ in out} and n >= 20000:
        out.append(("vector", {"index": "ivf"}, "vec/ivf"))
    return out


def table(rows: list[dict]) -> str:
    head = f"{'items':>7} {'store':<8} {'retriever':<12} {'write/s':>9} {'cpu w/s':>9} {'rec@10':>6} " \
           f"{'first ms':>9} {'p50 ms':>8} {'p95 ms':>8} {'p95 cpu':>8} {'queries':>7}  note"
    lines = [head, "-" * len(head)]
    for r in rows:
        note = []
        if r["store"] in ("vector", "hybrid", "vec/ivf") or r["retriever"] == "mmr":
            note.append("p95 ok" if r["p95_ms"] < TARGET_P95_MS else f"p95 > {TARGET_P95_MS:g} ms")
        if r["write_items_s"] < TARGET_WRITES:
            note.append(f"writes < {TARGET_WRITES:g}/s")
        if r["n_queries"] < r["queries_asked"]:
            note.append(f"time-capped: {r['n_queries']} of {r['queries_asked']} queries")
        lines.append(f"{r['items']:>7} {r['store']:<8} {r['retriever']:<12} {r['write_items_s']:>9,.0f} "
                     f"{r['write_cpu_items_s']:>9,.0f} {r['recall_at_10']:>6.2f} {r['first_ms']:>9.1f} {r['p50_ms']:>8.2f} {r['p95_ms']:>8.2f} "
                     f"{r['p95_cpu_ms']:>8.2f} {r['n_queries']:>7}  "
                     f"{'; '.join(note)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated store sizes")
    ap.add_argument("--quick", action="store_true", help="sizes 2000,10000 and 30 queries")
    ap.add_argument("--queries", type=int, default=100, help="queries per pair (after one warm-up)")
    ap.add_argument("--batch", type=int, default=100, help="items per add() call")
    ap.add_argument("--pair-seconds", type=float, default=4.0, help="time cap on one pair's queries")
    ap.add_argument("--threads", type=int, default=1, help="FAISS OpenMP threads")
    ap.add_argument("--stores", default="", help="comma-separated store labels to run (default: all)")
    ap.add_argument("--data", default=None, help="ignored (make bench passes it to every benchmark)")
    args = ap.parse_args(argv)
    sizes = [2000, 10000] if args.quick else [int(s) for s in args.sizes.split(",") if s.strip()]
    n_queries = 30 if args.quick else args.queries

    import faiss

    faiss.omp_set_num_threads(args.threads)
    pairs = valid_pairs()
    print(f"store x retriever benchmark: sizes {sizes}, {n_queries} queries per pair (+1 warm-up), "
          f"add() batches of {args.batch}, FAISS threads {args.threads}, {os.cpu_count()} cpus; "
          f"hash embeddings (384-d) precomputed; top_k 4; load average {os.getloadavg()[0]:.1f}", flush=True)
    items_all = corpus(max(sizes))
    for j, it in enumerate(items_all):
        it.id = f"#{j}"  # row j of the vectors: lets recall be checked against brute force
    hasher = Embedder("hash", use_cache=False)
    vectors_all = hasher.embed([it.text for it in items_all])
    rows: list[dict] = []
    t_total = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            qs = queries(n_queries + 1, n)
            qvecs = hasher.embed([q.text for q in qs[:50]])
            for store_name, config, label in variants(pairs, n):
                if args.stores and label not in args.stores.split(","):
                    continue
                # A fresh embedder per store: its in-memory memo must not carry over between stores.
                resources = Resources(embedder=Embedder("hash", use_cache=False), cache_dir=Path(tmp))
                items = [it.copy() for it in items_all[:n]]
                store, writes, cpu_writes = write(store_name, config, resources, items, vectors_all[:n], args.batch)
                recall = recall_at(store, vectors_all[:n], qvecs)
                print(f"  {n} items -> {label}: {writes:,.0f} items/s ({cpu_writes:,.0f} per cpu-s), "
                      f"recall@10 {recall:.2f}", flush=True)
                for s, retriever_name in pairs:
                    if s != store_name:
                        continue
                    r = read(retriever_name, resources, store, qs, args.pair_seconds)
                    rows.append({"items": n, "store": label, "retriever": retriever_name,
                                 "write_items_s": writes, "write_cpu_items_s": cpu_writes,
                                 "recall_at_10": recall, "queries_asked": n_queries, **r})
                del store, items, resources
                gc.collect()
    print()
    print(table(rows))
    print(f"\ntotal {time.perf_counter() - t_total:.0f} s, load average {os.getloadavg()[0]:.1f}. 'first ms' = "
          "first query after the writes (builds retriever caches), excluded from p50/p95; 'cpu' columns use "
          "process CPU time, which machine contention does not inflate; rec@10 = store.search recall of the "
          "exact top-10 (brute force) over 50 queries")
    return rows


if __name__ == "__main__":
    main()

"""Interleaved add -> search benchmark: what a chat app pays per turn. For every LM-free store with
each of its retrievers, at 10k and 100k items: bulk add throughput, search p50/p95 with nothing
added ("static"), and search p50/p95 when one item is added before each search ("interleaved"),
measured side by side in one run, with their ratio.

    python benchmarks/bench_interleaved.py [--sizes 10000,100000] [--queries 100] [--stores hybrid]

Target (issue 13): interleaved add -> search p95 < 20 ms at 100k items for the hybrid store with
the hybrid retriever. ``llm_graph`` is left out: its add() asks an LM for entities and facts of every
item, so it cannot run LM-free (its read side is the ``graph`` store's, measured here).
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
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from bench_stores import corpus, queries, valid_pairs  # noqa: E402

from memarch.pipeline.embed import Embedder  # noqa: E402
from memarch.pipeline.episodes import Query  # noqa: E402
from memarch.pipeline.items import MemoryItem  # noqa: E402
from memarch.pipeline.registry import REGISTRY  # noqa: E402
from memarch.pipeline.resources import Resources  # noqa: E402

TARGET_P95_MS = 20.0
TARGET_PAIR = ("hybrid", "hybrid")


def build(store_name: str, resources: Resources, items: list[MemoryItem], vectors: np.ndarray, batch: int):
    """A store holding ``items`` (added in batches) and its bulk add throughput (items/s)."""
    store = REGISTRY.get("store", store_name).cls(resources)
    t0 = time.perf_counter()
    for start in range(0, len(items), batch):
        store.add(items[start:start + batch], vectors=vectors[start:start + batch])
    return store, len(items) / (time.perf_counter() - t0)


def _percentiles(ms: list[float]) -> tuple[float, float]:
    arr = np.asarray(ms) if ms else np.zeros(1)
    return float(np.percentile(arr, 50)), float(np.percentile(arr, 95))


def measure(retriever, store, qs: list[Query], extra: list[MemoryItem], extra_vectors: np.ndarray,
            budget_s: float) -> dict:
    """Static searches over ``qs``, then the same queries each preceded by adding one of ``extra``."""
    retriever.retrieve(qs[0], store, top_k=4)  # builds the per-version caches once, off the clock
    static: list[float] = []
    start = time.perf_counter()
    for q in qs[1:]:
        t = time.perf_counter()
        retriever.retrieve(q, store, top_k=4)
        static.append((time.perf_counter() - t) * 1000)
        if time.perf_counter() - start > budget_s and len(static) >= 10:
            break
    adds, searches, cpu = [], [], []
    start = time.perf_counter()
    for q, item, vec in zip(qs[1:], extra, extra_vectors):
        t = time.perf_counter()
        store.add([item], vectors=vec[None, :])
        t_add = time.perf_counter()
        c = time.process_time()
        got = retriever.retrieve(q, store, top_k=4)
        searches.append((time.perf_counter() - t_add) * 1000)
        cpu.append((time.process_time() - c) * 1000)
        adds.append((t_add - t) * 1000)
        assert all(s.item.episode_id != q.episode_id for s in got.items), "self-retrieval"
        if time.perf_counter() - start > budget_s and len(searches) >= 10:
            break
    s50, s95 = _percentiles(static)
    i50, i95 = _percentiles(searches)
    turn = [a + s for a, s in zip(adds, searches)]
    return {"static_p50": s50, "static_p95": s95, "inter_p50": i50, "inter_p95": i95,
            "inter_p95_cpu": _percentiles(cpu)[1], "add_p95": _percentiles(adds)[1],
            "turn_p95": _percentiles(turn)[1], "ratio_p95": i95 / max(s95, 1e-9),
            "n_static": len(static), "n_inter": len(searches)}


def table(rows: list[dict]) -> str:
    head = (f"{'items':>7} {'store':<7} {'retriever':<12} {'add/s':>9} {'static p50':>10} {'p95':>7} "
            f"{'inter p50':>10} {'p95':>7} {'p95 cpu':>7} {'x static':>8} {'add p95':>7} {'turn p95':>8}  note")
    lines = [head, "-" * len(head)]
    for r in rows:
        note = []
        if (r["store"], r["retriever"]) == TARGET_PAIR:
            note.append("target met" if r["inter_p95"] < TARGET_P95_MS else f"target missed (> {TARGET_P95_MS:g} ms)")
        if r["n_inter"] < r["queries_asked"] or r["n_static"] < r["queries_asked"]:
            note.append(f"time-capped: {r['n_static']} static, {r['n_inter']} interleaved")
        lines.append(f"{r['items']:>7} {r['store']:<7} {r['retriever']:<12} {r['add_items_s']:>9,.0f} "
                     f"{r['static_p50']:>10.2f} {r['static_p95']:>7.2f} {r['inter_p50']:>10.2f} "
                     f"{r['inter_p95']:>7.2f} {r['inter_p95_cpu']:>7.2f} {r['ratio_p95']:>8.2f} "
                     f"{r['add_p95']:>7.2f} {r['turn_p95']:>8.2f}  {'; '.join(note)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated store sizes")
    ap.add_argument("--queries", type=int, default=100, help="queries per pair and phase (after one warm-up)")
    ap.add_argument("--batch", type=int, default=100, help="items per add() call while filling the store")
    ap.add_argument("--pair-seconds", type=float, default=10.0, help="time cap on one phase of one pair")
    ap.add_argument("--stores", default="", help="comma-separated stores to run (default: all LM-free)")
    ap.add_argument("--retrievers", default="", help="comma-separated retrievers to run (default: all valid)")
    ap.add_argument("--data", default=None, help="ignored (make bench passes it to every benchmark)")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    pairs = [(s, r) for s, r in valid_pairs()
             if (not args.stores or s in args.stores.split(","))
             and (not args.retrievers or r in args.retrievers.split(","))]
    n_extra = args.queries * max(1, max((sum(1 for s2, _ in pairs if s2 == s) for s, _ in pairs), default=1))
    print(f"interleaved add -> search benchmark: sizes {sizes}, {args.queries} queries per pair and phase "
          f"(+1 warm-up), fill batches of {args.batch}, one item added before each interleaved search; "
          f"hash embeddings (384-d) precomputed; top_k 4; {os.cpu_count()} cpus; "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    items_all = corpus(max(sizes) + n_extra)
    for j, it in enumerate(items_all):
        it.id = f"#{j}"
    hasher = Embedder("hash", use_cache=False)
    vectors_all = hasher.embed([it.text for it in items_all])
    extra_at = max(sizes)  # the items added during the interleaved phases: never in the initial fill
    rows: list[dict] = []
    t_total = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            qs = queries(args.queries + 1, n)
            for store_name in dict.fromkeys(s for s, _ in pairs):
                resources = Resources(embedder=Embedder("hash", use_cache=False), cache_dir=Path(tmp))
                store, add_rate = build(store_name, resources, [it.copy() for it in items_all[:n]],
                                        vectors_all[:n], args.batch)
                print(f"  {n} items -> {store_name}: {add_rate:,.0f} items/s", flush=True)
                next_extra = extra_at
                for s, retriever_name in pairs:
                    if s != store_name:
                        continue
                    retriever = REGISTRY.get("retriever", retriever_name).cls(resources)
                    extra = [it.copy() for it in items_all[next_extra:next_extra + args.queries]]
                    r = measure(retriever, store, qs, extra, vectors_all[next_extra:next_extra + args.queries],
                                args.pair_seconds)
                    next_extra += r["n_inter"]
                    rows.append({"items": n, "store": store_name, "retriever": retriever_name,
                                 "add_items_s": add_rate, "queries_asked": args.queries, **r})
                    print(f"    {retriever_name}: static p95 {r['static_p95']:.2f} ms, interleaved p95 "
                          f"{r['inter_p95']:.2f} ms", flush=True)
                del store, resources
                gc.collect()
    print()
    print(table(rows))
    print(f"\ntotal {time.perf_counter() - t_total:.0f} s, load average {os.getloadavg()[0]:.1f}. Times in ms, "
          "wall clock unless 'cpu'. 'static': search with nothing added since the previous search; 'inter': "
          "search right after add() of one item (p95 cpu = its process CPU time, which machine load does not "
          "inflate); 'x static' = inter p95 / static p95; 'add p95' = the one-item add; 'turn' = add + search. "
          "Each retriever's interleaved phase adds to the same store, so later rows run on slightly more items.")
    return rows


if __name__ == "__main__":
    main()

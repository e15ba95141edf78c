"""Memory budgets on a conversation benchmark: the score of each manager with the encoder, store
and retriever fixed, unlimited and at budgets of P% of the raw turn tokens (the percentage is of the
mean conversation of the SEARCH split, never of the split scored), with what each policy did.

    nice -n 10 .venv/bin/python benchmarks/bench_memory_budget.py --benchmark locomo \\
        --data ../shared/data/locomo/locomo10.json --split test
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))
from bench_spread import paired_interval  # noqa: E402  (a sibling script)

MANAGERS = ("lightweight", "json_full", "tool_manager", "graph_consolidate")


def architectures(encoder: str, store: str, retriever: str) -> list:
    """One architecture per manager; graph_consolidate needs a graph store and graph retriever."""
    from memarch.pipeline.architecture import Architecture

    return [Architecture((encoder,), "graph", "graph", m) if m == "graph_consolidate"
            else Architecture((encoder,), store, retriever, m) for m in MANAGERS]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--benchmark", default="locomo")
    p.add_argument("--data", default=None)
    p.add_argument("--split", default="test")
    p.add_argument("--budgets", default="25%,10%,5%", help="comma-separated, as --memory-budget takes them")
    p.add_argument("--encoder", default="turn")
    p.add_argument("--store", default="hybrid")
    p.add_argument("--retriever", default="hybrid")
    p.add_argument("--all-graph", action="store_true",
                   help="also run every manager on encoder | graph | graph (one store for all four)")
    p.add_argument("--context-budget", type=int, default=200)
    p.add_argument("--embedder", default="all-MiniLM-L6-v2")
    p.add_argument("--json", default=None, help="write every cell here")
    args = p.parse_args(argv)

    import faiss

    faiss.omp_set_num_threads(1)  # small per-namespace indexes: threads only contend
    from memarch.benchmarks import get_benchmark
    from memarch.benchmarks.evaluation.memory_budget import MemoryBudget
    from memarch.pipeline.architecture import Architecture
    from memarch.pipeline.embed import Embedder
    from memarch.benchmarks.evaluation.evaluate import evaluate
    from memarch.pipeline.resources import Resources

    bench = get_benchmark(args.benchmark, args.data)
    resources = Resources(embedder=Embedder(args.embedder))
    budgets = [MemoryBudget.resolve(s, bench) for s in args.budgets.split(",") if s.strip()]
    print(f"{args.benchmark} [{args.split}]: {bench.split(args.split).stats()}; metric answer_span, "
          f"context B={args.context_budget}")
    for b in budgets:
        print(f"  {b.describe()}")
    sets = [architectures(args.encoder, args.store, args.retriever)]
    if args.all_graph:
        sets.append([Architecture((args.encoder,), "graph", "graph", m) for m in MANAGERS])
    columns = ["unlimited"] + [b.spec for b in budgets]
    cells: list[dict] = []
    for archs in sets:
        rows, per_query = [], {}
        for arch in archs:
            scores = []
            for b in [None] + budgets:
                r = evaluate(arch, bench, split=args.split, resources=resources, context_budget=args.context_budget,
                             config=b.config() if b else None)
                kept = r.metadata.get("memory_budget", {})
                cells.append({"architecture": arch.key(), "budget": b.spec if b else "unlimited",
                              "words": b.words if b else None, "score": r.score, "failed": r.failed,
                              "error": r.error, "memory_items": r.cost.get("memory_items"), "policy": kept,
                              "wall_s": r.cost.get("wall_s")})
                scores.append(float("nan") if r.failed else r.score)
                per_query[(arch.key(), cells[-1]["budget"])] = [o.score for o in r.outcomes]
                print(f"  {arch.key():<36} {cells[-1]['budget']:>9}  {r.score:.4f}  items "
                      f"{r.cost.get('memory_items', 0):g}  {kept or ''}  {r.cost['wall_s']:.0f} s", flush=True)
            rows.append((arch, scores))
        print()
        print("| manager | architecture | " + " | ".join(columns) + " |")
        print("|---|---|" + "---|" * len(columns))
        for arch, scores in rows:
            print(f"| {arch.manage} | {arch.key()} | " + " | ".join(f"{s:.4f}" for s in scores) + " |")
        for j, col in enumerate(columns):
            vals = [s[j] for _, s in rows]
            best = max(rows, key=lambda row: row[1][j])[0].key()
            worst = min(rows, key=lambda row: row[1][j])[0].key()
            lo, hi = paired_interval(per_query[(best, col)], per_query[(worst, col)])
            print(f"spread at {col}: {max(vals) - min(vals):.4f} (max {max(vals):.4f}, min {min(vals):.4f}, "
                  f"median {statistics.median(vals):.4f}; best - worst paired over the same questions, "
                  f"95% bootstrap [{lo:+.4f}, {hi:+.4f}])")
        print()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"columns": columns, "budgets": [b.__dict__ for b in budgets], "cells": cells}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Does a benchmark separate architectures? Evaluate a seeded sample of the LM-free valid
conversation space and report the spread of the score, the best and worst, a bootstrap
interval of the best-minus-median paired difference, and the per-category ranges.

    .venv/bin/python benchmarks/bench_spread.py --sample 40 --split search
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys


def paired_interval(a: list[float], b: list[float], rounds: int = 1000, seed: int = 0) -> tuple[float, float]:
    """95% bootstrap interval of mean(a - b) over queries (the same queries, paired)."""
    rng = random.Random(seed)
    diffs = [x - y for x, y in zip(a, b)]
    means = sorted(statistics.fmean(rng.choices(diffs, k=len(diffs))) for _ in range(rounds))
    return means[int(0.025 * rounds)], means[int(0.975 * rounds)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--benchmark", default="generated")
    p.add_argument("--data", default=None)
    p.add_argument("--sample", type=int, default=40, help="architectures sampled from the LM-free space")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--split", default="search")
    p.add_argument("--budget", type=int, default=200)
    p.add_argument("--embedder", default="all-MiniLM-L6-v2")
    p.add_argument("--json", default=None, help="write every trial's summary here")
    args = p.parse_args(argv)

    import faiss

    faiss.omp_set_num_threads(1)  # small per-namespace indexes: threads only contend
    from memarch.benchmarks import get_benchmark
    from memarch.pipeline.embed import Embedder
    from memarch.benchmarks.evaluation.evaluate import evaluate
    from memarch.pipeline.resources import Resources
    from memarch.pipeline.space import ArchitectureSpace

    space = list(ArchitectureSpace("conversation", lm_available=False).enumerate())
    archs = random.Random(args.seed).sample(space, min(args.sample, len(space)))
    bench = get_benchmark(args.benchmark, args.data)
    resources = Resources(embedder=Embedder(args.embedder))
    print(f"{args.benchmark} [{args.split}]: {bench.split(args.split).stats()}; "
          f"{len(archs)} of {len(space)} LM-free valid architectures; B={args.budget}")
    rows = []
    baseline = evaluate(None, bench, split=args.split, resources=resources, context_budget=args.budget)
    for i, arch in enumerate(archs, 1):
        r = evaluate(arch, bench, split=args.split, resources=resources, context_budget=args.budget)
        rows.append((arch, r))
        status = f"FAILED {r.error}" if r.failed else f"{r.score:.4f}"
        print(f"[{i:2d}] {status:>8}  {r.cost['wall_s']:6.2f} s  {arch.key()}", flush=True)
    ok = sorted([(a, r) for a, r in rows if not r.failed], key=lambda x: -x[1].score)
    if not ok:
        print("every trial failed", file=sys.stderr)
        return 1
    scores = [r.score for _, r in ok]
    median_arch, median = ok[len(ok) // 2]
    best_arch, best = ok[0]
    lo, hi = paired_interval([o.score for o in best.outcomes], [o.score for o in median.outcomes])
    print(f"\nno-memory baseline: {baseline.score:.4f}")
    print(f"score over {len(ok)} architectures: min {min(scores):.4f}  median {statistics.median(scores):.4f}  "
          f"max {max(scores):.4f}  spread (max-min) {max(scores) - min(scores):.4f}  stdev {statistics.pstdev(scores):.4f}")
    print(f"best   {best.score:.4f}  {best_arch.key()}")
    print(f"median {median.score:.4f}  {median_arch.key()}")
    print(f"worst  {ok[-1][1].score:.4f}  {ok[-1][0].key()}")
    print(f"best - median, paired bootstrap 95%: [{lo:+.4f}, {hi:+.4f}]")
    cats = sorted({c for _, r in ok for c in r.per_category})
    for c in cats:
        vals = [r.per_category.get(c, 0.0) for _, r in ok]
        print(f"  {c:<18} min {min(vals):.3f}  max {max(vals):.3f}")
    print(f"failed trials: {len(rows) - len(ok)}; mean warm trial time "
          f"{statistics.fmean(r.cost['wall_s'] for _, r in ok[1:] or ok):.2f} s")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump([{"architecture": a.key(), "score": r.score, "failed": r.failed, "error": r.error,
                        "per_category": r.per_category, "wall_s": r.cost.get("wall_s")} for a, r in rows], fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

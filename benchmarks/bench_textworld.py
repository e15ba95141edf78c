"""TextWorldExpress, LM-free: the no-memory agent beside a few LM-free memory architectures on the
validation and test splits over several benchmark seeds, side by side in one run.

    .venv/bin/python benchmarks/bench_textworld.py --data IGNORED [--seeds 0,1,2]

Per (architecture, split) it prints the per-seed mean of the success rate, the task score (1 for
a success, else half the game's partial score) and the mean steps, plus the task score of each
seed. Tune on validation; test is the held-out check. Needs Java (TextWorldExpress).
"""
from __future__ import annotations

import argparse
import logging
import statistics
import sys
import time

ARCHS = {
    "no-memory": None,
    "trajectory": {"schema_version": "1", "encode": ["trajectory"], "store": "json", "retrieve": "hybrid",
                   "manage": "tool_manager"},
    "workflow+trajectory": {"schema_version": "1", "encode": ["workflow", "trajectory"], "store": "json",
                            "retrieve": "hybrid", "manage": "tool_manager"},
    "workflow+shortcut": {"schema_version": "1", "encode": ["workflow", "shortcut"], "store": "json",
                          "retrieve": "hybrid", "manage": "tool_manager"},
    "wf+traj+shortcut": {"schema_version": "1", "encode": ["workflow", "trajectory", "shortcut"],
                         "store": "json", "retrieve": "hybrid", "manage": "tool_manager"},
}


def setup(args, names: str) -> tuple[list[int], list[str], list[str], object]:
    """The start the TextWorldExpress benchmarks share: FAISS on one thread, warnings off, the
    seeds, splits and names asked for, and one embedder (one model load, embeddings memoised
    across trials)."""
    import faiss

    faiss.omp_set_num_threads(1)
    logging.disable(logging.WARNING)
    from memarch.pipeline.embed import Embedder

    def listed(text: str) -> list[str]:
        return [x.strip() for x in text.split(",") if x.strip()]

    return [int(s) for s in listed(args.seeds)], listed(args.splits), listed(names), Embedder(args.embedder)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=None, help="ignored (TextWorldExpress generates its games)")
    p.add_argument("--seeds", default="0,1,2", help="benchmark seeds (which game instances are drawn)")
    p.add_argument("--splits", default="validation,test")
    p.add_argument("--tasks-per-game", type=int, default=16)
    p.add_argument("--archs", default=",".join(ARCHS), help="subset of: " + ", ".join(ARCHS))
    p.add_argument("--explore", type=float, default=None,
                   help="the agent's exploration weight (default: the benchmark's)")
    p.add_argument("--embedder", default="all-MiniLM-L6-v2", help="'hash' for a model-free run")
    args = p.parse_args(argv)
    seeds, splits, names, embedder = setup(args, args.archs)
    from memarch.benchmarks.textworld import TextWorldBenchmark
    from memarch.benchmarks.evaluation.evaluate import evaluate
    from memarch.pipeline.resources import Resources

    started = time.perf_counter()
    # rows[(arch, split)] = list of (success, task_score, steps) per seed
    rows: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    per_cat: dict[tuple[str, str], dict[str, list[float]]] = {}
    for seed in seeds:
        extra = {} if args.explore is None else {"explore": args.explore}
        bench = TextWorldBenchmark(seed=seed, tasks_per_game=args.tasks_per_game, **extra)
        for split in splits:
            for name in names:
                r = evaluate(ARCHS[name], bench, split=split, resources=Resources(embedder=embedder))
                if r.failed:
                    print(f"FAILED {name} {split} seed {seed}: {r.error}", file=sys.stderr)
                    continue
                rows.setdefault((name, split), []).append(
                    (r.scores["success_rate"], r.scores["task_score"], r.scores["steps"]))
                for c, v in r.per_category.items():
                    per_cat.setdefault((name, split), {}).setdefault(c, []).append(v)
        print(f"  seed {seed} done ({time.perf_counter() - started:.0f} s)", file=sys.stderr)

    cats = sorted({c for d in per_cat.values() for c in d})
    for split in splits:
        print(f"\n== {split} (mean over seeds {','.join(map(str, seeds))}) ==")
        head = f"{'architecture':<22}{'success':>8}{'score':>8}{'steps':>7}  " + "".join(f"{c[:8]:>9}" for c in cats)
        print(head + "   score per seed")
        for name in names:
            vals = rows.get((name, split))
            if not vals:
                continue
            succ, score, steps = (statistics.mean(v[i] for v in vals) for i in range(3))
            cat = per_cat.get((name, split), {})
            cells = "".join(f"{statistics.mean(cat[c]):>9.3f}" if c in cat else f"{'-':>9}" for c in cats)
            seeds_s = " ".join(f"{v[1]:.3f}" for v in vals)
            print(f"{name:<22}{succ:>8.3f}{score:>8.3f}{steps:>7.1f}  {cells}   {seeds_s}")
    print(f"\n({len(seeds)} seeds x {len(splits)} splits x {len(names)} architectures in "
          f"{time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

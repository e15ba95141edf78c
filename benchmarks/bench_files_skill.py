"""TextWorldExpress, LM-free: file-system memory as a skill. The agent keeps a map note per room in
a `files` store under each memory scaffold (append-only vs upsert by key, search before write off
vs on, key: value vs free-text notes); per scaffold, split and seed it reports duplicate writes,
stored duplicate lines, empty searches, memory actions per step, stuck and back-and-forth moves
and the task score, then the goal: upsert versus append-only duplicate writes and task score.

    nice -n 10 .venv/bin/python benchmarks/bench_files_skill.py [--seeds 0,1,2] [--splits validation,test]

Nothing is tuned here: the note policy is fixed (memarch/benchmarks/agents/note_policy.py). Needs Java.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_textworld import setup  # noqa: E402

BASE = {"schema_version": "1", "encode": ["trajectory"], "store": "files", "retrieve": "hybrid",
        "manage": "tool_manager"}
# name -> (upsert, search_before_write, kv_schema)
SCAFFOLDS = {
    "append-only": (0, 0, 1),
    "append+search": (0, 1, 1),
    "upsert": (1, 0, 1),
    "upsert+search": (1, 1, 1),
    "append-only free text": (0, 0, 0),
    "upsert+search free text": (1, 1, 0),
}
COLUMNS = ("task_score", "success_rate", "writes", "duplicate_writes", "stored_duplicate_lines",
           "empty_searches", "memory_actions_per_step", "stuck_moves", "back_and_forth_moves")


def arch(name: str) -> dict:
    up, search, kv = SCAFFOLDS[name]
    return {**BASE, "params": {"store.upsert": up, "store.search_before_write": search, "store.kv_schema": kv}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=None, help="ignored (TextWorldExpress generates its games)")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--splits", default="validation,test")
    p.add_argument("--tasks-per-game", type=int, default=16)
    p.add_argument("--scaffolds", default=",".join(SCAFFOLDS), help="subset of: " + ", ".join(SCAFFOLDS))
    p.add_argument("--embedder", default="all-MiniLM-L6-v2", help="'hash' for a model-free run")
    args = p.parse_args(argv)
    seeds, splits, names, embedder = setup(args, args.scaffolds)
    from memarch.benchmarks.textworld import TextWorldBenchmark
    from memarch.benchmarks.evaluation.evaluate import evaluate
    from memarch.pipeline.resources import Resources

    started = time.perf_counter()
    rows: dict[tuple[str, str], list[dict[str, float]]] = {}  # (scaffold, split) -> per seed
    for seed in seeds:
        bench = TextWorldBenchmark(seed=seed, tasks_per_game=args.tasks_per_game)
        for split in splits:
            for name in names:
                r = evaluate(arch(name), bench, split=split, resources=Resources(embedder=embedder))
                if r.failed:
                    print(f"FAILED {name} {split} seed {seed}: {r.error}", file=sys.stderr)
                    continue
                rows.setdefault((name, split), []).append({**r.scores, **r.cost})
        print(f"  seed {seed} done ({time.perf_counter() - started:.0f} s)", file=sys.stderr)

    for split in splits:
        print(f"\n== {split}: mean per seed over seeds {','.join(map(str, seeds))} ==")
        print(f"{'scaffold':<25}" + "".join(f"{c[:12]:>13}" for c in COLUMNS))
        for name in names:
            vals = rows.get((name, split), [])
            if vals:
                print(f"{name:<25}" + "".join(f"{statistics.mean(v.get(c, 0.0) for v in vals):>13.3f}"
                                              for c in COLUMNS))
        base = rows.get(("append-only", split), [])
        for name in ("upsert", "upsert+search"):
            arm = rows.get((name, split), [])
            if not base or len(arm) != len(base):
                continue
            dup_b = sum(v["duplicate_writes"] for v in base)
            dup_a = sum(v["duplicate_writes"] for v in arm)
            cut = 100.0 * (1 - dup_a / dup_b) if dup_b else 0.0
            deltas = [a["task_score"] - b["task_score"] for a, b in zip(arm, base)]
            print(f"goal {name} vs append-only [{split}]: duplicate writes {dup_b:g} -> {dup_a:g} "
                  f"({cut:.1f}% fewer; goal >= 50%), task score change per seed "
                  + " ".join(f"{d:+.3f}" for d in deltas) + f" (mean {statistics.mean(deltas):+.3f})")
    print(f"\n({len(seeds)} seeds x {len(splits)} splits x {len(names)} scaffolds in "
          f"{time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

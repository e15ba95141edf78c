"""What a fresh process pays before its first retrieval score (issue 35, item 4): the same questions
scored by ranx (numba kernels compiled in every process) and by trec_eval (`pytrec_eval`, compiled
C), each in new interpreters, side by side; and the wall time of ``memarch evaluate`` of a preset
on LoCoMo with warm caches, in this checkout and, with ``--baseline DIR``, in another one (e.g. a
worktree of main). Medians of --repeat fresh processes, with the load average.

    .venv/bin/python benchmarks/bench_process_start.py --repeat 3 --data ../shared/data --baseline ../main
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = "{f'q{i}': ([f'D1:{i % 7}', f'D2:{i % 5}'], [f'D{j % 3}:{j}' for j in range(i % 30)]) for i in range(200)}"
RANX = f"""
import time; t = time.perf_counter()
from ranx import Qrels, Run, evaluate
qs = {QUESTIONS}
qrels = Qrels({{q: {{g: 1 for g in gold}} for q, (gold, _) in qs.items()}})
run = Run({{q: ({{t: float(len(r) - i) for i, t in enumerate(r)}} or {{"none": 0.0}}) for q, (_, r) in qs.items()}})
evaluate(qrels, run, ["hit_rate@1", "hit_rate@5", "recall@5", "ndcg@5", "mrr"], return_mean=False)
print(time.perf_counter() - t)
"""
TREC = f"""
import time; t = time.perf_counter()
from memarch.benchmarks.metrics.retrieval import retrieval_scores_many
retrieval_scores_many({QUESTIONS})
print(time.perf_counter() - t)
"""
PRESET = {"schema_version": "1", "encode": ["turn", "event"], "store": "vector", "retrieve": "hybrid",
          "manage": "json_full"}  # memp


def in_fresh_process(code: str, cwd: Path) -> float:
    """Seconds the snippet reports for itself (its imports and first call), in a new interpreter."""
    out = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(cwd)})
    if out.returncode != 0:
        raise SystemExit(out.stderr[-800:])
    return float(out.stdout.strip().splitlines()[-1])


def evaluate_wall(checkout: Path, data: Path, arch: Path) -> float:
    argv = [sys.executable, "-m", "memarch", "evaluate", "--benchmark", "locomo", "--data", str(data / "locomo"),
            "--architecture", str(arch)]
    t0 = time.perf_counter()
    out = subprocess.run(argv, cwd=checkout, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(checkout), "HF_HUB_OFFLINE": "1"})
    took = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"{checkout}: {out.stderr[-800:]}")
    return took


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    p.add_argument("--baseline", default=None, help="another checkout to time `memarch evaluate` in too")
    args = p.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    ranx = [in_fresh_process(RANX, ROOT) for _ in range(args.repeat)]
    trec = [in_fresh_process(TREC, ROOT) for _ in range(args.repeat)]
    print(f"first score of 200 questions in a fresh process: ranx {statistics.median(ranx):.2f} s, "
          f"trec_eval {statistics.median(trec):.3f} s ({statistics.median(ranx) / statistics.median(trec):.0f}x)")
    with tempfile.TemporaryDirectory() as tmp:
        arch = Path(tmp) / "memp.json"
        arch.write_text(__import__("json").dumps(PRESET))
        checkouts = [("this checkout", ROOT)] + ([("baseline", Path(args.baseline).resolve())] if args.baseline else [])
        for _, checkout in checkouts:  # warm the embedding cache for both first
            evaluate_wall(checkout, Path(args.data), arch)
        for name, checkout in checkouts:
            walls = [evaluate_wall(checkout, Path(args.data), arch) for _ in range(args.repeat)]
            print(f"`memarch evaluate` of memp on LoCoMo (test split, warm caches), {name} ({checkout}): "
                  f"median {statistics.median(walls):.2f} s wall over {len(walls)} fresh processes")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

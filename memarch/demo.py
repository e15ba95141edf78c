"""What ``make run`` runs: `memarch compare` on the embedded generated benchmark (guided vs random vs
TPE, 3 seeds, equal budgets), then `memarch compile` of the winner (resuming its seed-0 study with a
few more trials), ending with the table, the PNG path and how to open MLflow."""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from memarch.cli import main as memarch


def run(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m memarch.demo", description=__doc__)
    p.add_argument("--budget", type=int, default=10, help="trials per strategy and seed (default 10)")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--extra", type=int, default=4, help="trials the winner's compile adds (default 4)")
    p.add_argument("--out", default="mlruns/demo")
    p.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                   help="compare's studies side by side (default: 2, or 1 on a one-core machine)")
    args = p.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    prefix = time.strftime("demo-%Y%m%d-%H%M%S")
    started = time.time()
    print(f"[1/2] memarch compare: guided vs random vs tpe, {args.seeds} seeds x {args.budget} trials "
          f"on the generated benchmark (LM-free space)", flush=True)
    rc = memarch(["compare", "--benchmark", "generated", "--budget", str(args.budget), "--seeds", str(args.seeds),
                  "--strategies", "guided,random,tpe", "--study-name", prefix, "--out", args.out,
                  "--workers", str(args.workers)])
    if rc:
        return rc
    table = Path(args.out) / "compare-generated.txt"
    winner = _winner(args.out)
    print(f"\n[2/2] memarch compile: the winner ({winner}) resumes its seed-0 study with {args.extra} more trials, "
          f"picks on validation, reports on test, saves the program", flush=True)
    rc = memarch(["compile", "--benchmark", "generated", "--strategies", winner, "--resume",
                  "--study-name", f"{prefix}-conversation-{winner}-s0", "--budget", str(args.budget + args.extra),
                  "--out", args.out, "--output", str(Path(args.out) / "program.json")])
    if rc:
        return rc
    print("\n" + "=" * 100)
    print(table.read_text())
    print(f"curves (PNG): {Path(args.out) / 'compare-generated.png'}")
    print(f"program:      {Path(args.out) / 'program.json'}")
    print("MLflow:       memarch ui   (starts the MLflow UI on sqlite:///mlruns/mlflow.db and prints the URL "
          "of the study's runs table)")
    print(f"total time:   {time.time() - started:.0f} s")
    return 0


def _winner(out: str) -> str:
    """The strategy compare named the winner: best median VALIDATION score of its picks (ties: fewer
    trials to target). Test scores are only reported."""
    import json

    return json.loads((Path(out) / "compare-generated.json").read_text())["winner"]


if __name__ == "__main__":
    sys.exit(run())

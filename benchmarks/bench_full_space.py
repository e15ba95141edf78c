"""The full-space benchmark (issue 10): on LoCoMo, does searching the module knobs too (`--space full`)
find an LM-free memory that beats the best hand-designed one on test by >= 0.03, with a 95% CI above
0, at no more stored memory? Runs (or reuses) `memarch compare --space full --strategies guided`
and checks each seed's pick (chosen on validation) against the preset best on validation: a paired
bootstrap over the test questions of (pick - preset), and the memory tokens each keeps on test.

    .venv/bin/python benchmarks/bench_full_space.py --data ../shared/data              # ~30 min warm
    .venv/bin/python benchmarks/bench_full_space.py --data ../shared/data \\
        --select "memory_words<=46183"    # two objectives, the pick within memp's validation memory

A finished comparison in --out is reused (delete it to measure again).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def run_compare(args, out: Path) -> Path:
    result = out / "compare-locomo.json"
    if result.exists():
        print(f"reusing {result}")
        return result
    cmd = [sys.executable, "-m", "memarch", "compare", "--benchmark", "locomo", "--data", str(args.locomo),
           "--space", "full", "--strategies", "guided", "--budget", str(args.budget), "--seeds", str(args.seeds),
           "--finalists", "2",  # as measured (docs/search_results.md): compare's default before issue 48
           "--no-tracking", "--storage", f"sqlite:///{out.resolve()}/optuna.db", "--out", str(out)]
    if args.select:
        cmd += ["--objectives", "quality,memory_words", "--select", args.select]
    print(" ".join(cmd[2:]), flush=True)
    rc = subprocess.call(cmd)
    if rc != 0 or not result.exists():
        sys.exit(f"compare failed (exit {rc})")
    return result


def paired(a: dict[str, float], b: dict[str, float], n: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """Mean of a - b over the shared questions and its 95% bootstrap interval."""
    ids = sorted(set(a) & set(b))
    diff = [a[i] - b[i] for i in ids]
    rng = random.Random(seed)
    means = sorted(sum(rng.choice(diff) for _ in ids) / len(ids) for _ in range(n))
    return sum(diff) / len(diff), means[int(0.025 * n)], means[int(0.975 * n)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="../shared/data", help="shared data directory (locomo/ inside)")
    ap.add_argument("--budget", type=int, default=40)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--select", default="", help='e.g. "memory_words<=46183": two objectives, constrained pick')
    ap.add_argument("--out", default=None, help="comparison directory (default mlruns/bench/full-space[-select])")
    args = ap.parse_args()
    args.locomo = Path(args.data) / "locomo" / "locomo10.json"
    if not args.locomo.exists():
        print(f"no LoCoMo at {args.locomo}; skipped")
        return 0
    out = Path(args.out or ("mlruns/bench/full-space" + ("-select" if args.select else "")))
    out.mkdir(parents=True, exist_ok=True)
    runs = json.loads(run_compare(args, out).read_text())["runs"]

    from memarch.optimizers.evaluators import BenchmarkEvaluator
    from memarch.pipeline.presets import presets_for
    from memarch.pipeline.architecture import Architecture
    from memarch.pipeline.space import ArchitectureSpace

    metric = BenchmarkEvaluator("locomo", data_path=str(args.locomo), context_budget=200,
                             knobs={"split_by": "dialogue"}, metric="answer_span")
    cache: dict = {}

    def run(arch: Architecture, split: str):
        key = (arch.key(), split)
        if key not in cache:
            r = metric(arch, split)
            cache[key] = ({o.query_id: o.score for o in r.outcomes}, r.score, r.cost.get("memory_words", 0.0))
        return cache[key]

    presets = sorted(presets_for(ArchitectureSpace("conversation", lm_available=False)).items(),
                     key=lambda kv: -run(kv[1], "validation")[1])
    name, preset = presets[0]
    ref, ref_test, ref_mem = run(preset, "test")
    print(f"\npreset best on validation: {name} {preset.key()}: test {ref_test:.4f}, {ref_mem:,.0f} memory tokens")
    print("| seed | pick | test | - preset [95% CI] | memory tokens | CI > 0 | <= preset memory |")
    print("|---|---|---|---|---|---|---|")
    gains, above, lean = [], 0, 0
    for rep in runs["guided"]:
        arch = Architecture.from_dict(rep["architecture"])
        per, test, mem = run(arch, "test")
        gain, lo, hi = paired(per, ref)
        gains.append(gain)
        above += lo > 0
        lean += mem <= ref_mem
        print(f"| {rep['seed']} | {arch.key()} | {test:.4f} | {gain:+.4f} [{lo:+.4f}, {hi:+.4f}] | {mem:,.0f} | "
              f"{'yes' if lo > 0 else 'no'} | {'yes' if mem <= ref_mem else 'no'} |")
    n = len(gains)
    print(f"\nmedian gain {statistics.median(gains):+.4f}; gain >= 0.03 in {sum(g >= 0.03 for g in gains)}/{n} seeds, "
          f"CI above 0 in {above}/{n}, at no more memory than {name} in {lean}/{n}")
    met = statistics.median(gains) >= 0.03 and above == n and lean == n
    print(f"goal (>= 0.03, CI above 0, no more memory, every seed): {'MET' if met else 'NOT MET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

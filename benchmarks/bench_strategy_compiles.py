"""Issue 50, item 4: real compiles beside the replays. `memarch compile --space full --budget 40` with
each strategy (guided, tpe, hybrid; presets as round 0, no pruner, the defaults otherwise) on
LongMemEval_S (its first `--lme-limit` instances a split, `entity` left out, 128-token reads, as issue
49's compiles) and on LoCoMo (dialogue split, answer_span), one program per seed; then, per benchmark,
each strategy's pick on the whole test split against TPE's pick of the same seed, with a paired
bootstrap 95% CI over the test questions, and the count of seeds where it is better with its CI above 0.

    .venv/bin/python benchmarks/bench_strategy_compiles.py --task lme --strategies tpe,hybrid --seeds 0,1 --compile-only
    .venv/bin/python benchmarks/bench_strategy_compiles.py --seeds 0,1,2,3,4          # the table
    .venv/bin/python benchmarks/bench_strategy_compiles.py --rerun-guided --lme-limit 16 \
        --lme-embedder all-MiniLM-L6-v2-static --out mlruns/bench/strategy-compiles   # every strategy today

`guided-lm` is guided with the embedded LM as its proposer (`--meta-lm local`): a plumbing row.

Guided's programs are issue 49's (bench_two_tasks.py, same directories and settings); tpe's and hybrid's
sit beside them (`<dir>-tpe`, `<dir>-hybrid`). Test evaluations are shared with bench_two_tasks.py
(evaluations-lme*.json). Nothing is tuned on test: each compile picks on validation.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_full_space import paired  # noqa: E402  (sibling scripts)
from bench_two_tasks import (LME_EMBEDDER, METRIC, TASKS, compile_seed, data_found,  # noqa: E402
                             lme_dir_name, resources)


# Labels that are a strategy with more compile options: guided with the embedded LM (SmolLM2-135M) as its
# proposer, a plumbing row (the LM proves the path runs; it is too weak to say anything about quality).
LABELS = {"guided-lm": ("guided", ("--meta-lm", "local"))}


def program_path(out: Path, base: str, strategy: str, seed: int, rerun_guided: bool = False) -> Path:
    """Where a strategy's program of one seed lies: guided's in issue 49's directory ``base`` unless
    ``rerun_guided``; every other label (and guided rerun) in ``<base>-<label>``."""
    reuse = strategy == "guided" and not rerun_guided
    return out / (base if reuse else f"{base}-{strategy}") / f"seed-{seed}.program.json"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--seeds", default="0,1,2,3,4")
    ap.add_argument("--task", choices=(*TASKS, "both"), default="both")
    ap.add_argument("--strategies", default="guided,tpe,hybrid")
    ap.add_argument("--reference", default="tpe")
    ap.add_argument("--budget", type=int, default=40)
    ap.add_argument("--lme-limit", type=int, default=48)
    ap.add_argument("--lme-exclude", default="entity")
    ap.add_argument("--lme-embedder", default=LME_EMBEDDER,
                    help="LongMemEval's embedder (e.g. all-MiniLM-L6-v2-static, the landscape's; its own directories)")
    ap.add_argument("--rerun-guided", action="store_true",
                    help="compile guided with today's code into <dir>-guided instead of reusing issue 49's programs")
    ap.add_argument("--lme-cache", default=None)
    ap.add_argument("--locomo-cache", default=None)
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--partial", action="store_true", help="table of the programs that exist")
    ap.add_argument("--out", default="mlruns/bench/two-tasks")
    args = ap.parse_args()
    if not data_found(args):
        return 0
    out = Path(args.out)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    tasks = TASKS if args.task == "both" else (args.task,)
    lme_dir = lme_dir_name(args)

    def program(task: str, strategy: str, seed: int) -> Path:
        base = lme_dir if task == "lme" else task
        return program_path(out, base, strategy, seed, args.rerun_guided)

    for task in tasks:
        for strategy in strategies:
            for seed in seeds:
                path = program(task, strategy, seed)
                if not path.exists() and not args.partial:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    name, extra = LABELS.get(strategy, (strategy, ()))
                    compile_seed(args, task, seed, path, name, extra)
    if args.compile_only:
        return 0

    from memarch.optimizers.evaluators import BenchmarkEvaluator
    from memarch.pipeline.architecture import Architecture
    evaluators = {
        "lme": lambda: BenchmarkEvaluator("longmemeval", data_path=str(args.lme), resources=resources(args.lme_embedder, args.lme_cache),
                                          metric=METRIC["lme"]),
        "locomo": lambda: BenchmarkEvaluator("locomo", data_path=str(args.locomo), knobs={"split_by": "dialogue"},
                                             resources=resources(None, args.locomo_cache), metric=METRIC["locomo"]),
    }
    saved = out / "evaluations-lmeall.json"
    cache: dict = json.loads(saved.read_text()) if saved.exists() else {}
    made: dict = {}

    def test(arch: Architecture, task: str) -> dict:
        key = f"{arch.key()} @ {task} test"
        if task == "lme" and args.lme_embedder != LME_EMBEDDER:
            key += f" @ {args.lme_embedder}"
        if key not in cache:
            if task not in made:
                made[task] = evaluators[task]()
            r = made[task](arch, "test")
            if r.failed:
                sys.exit(f"{arch.key()} on {task} test failed: {r.error}")
            cache[key] = {"per": {o.query_id: o.score for o in r.outcomes}, "score": r.score,
                          "memory_words": (r.cost or {}).get("memory_words")}
            saved.write_text(json.dumps(cache))
        return cache[key]

    for task in tasks:
        picks = {s: {seed: Architecture.from_dict(json.loads(program(task, s, seed).read_text())["architecture"])
                     for seed in seeds if program(task, s, seed).exists()} for s in strategies}
        ref = args.reference
        print(f"\n## {task} test ({METRIC[task]}): each strategy's pick - {ref}'s pick of the same seed, paired 95% CI")
        print("| strategy | seed | pick | test | - " + ref + " [95% CI] |")
        print("|---|---|---|---|---|")
        wins: dict = {}
        for s in strategies:
            for seed, arch in picks[s].items():
                r = test(arch, task)
                cell = ""
                if s != ref and seed in picks.get(ref, {}):
                    d, lo, hi = paired(r["per"], test(picks[ref][seed], task)["per"])
                    cell = f"{d:+.4f} [{lo:+.4f}, {hi:+.4f}]"
                    wins.setdefault(s, []).append((d, lo, hi))
                print(f"| {s} | {seed} | `{arch.key()}` | {r['score']:.4f} | {cell} |", flush=True)
        for s, rows in wins.items():
            print(f"{s} vs {ref} on {task}: better in {sum(d > 0 for d, _, _ in rows)}/{len(rows)} seeds, "
                  f"CI above 0 in {sum(lo > 0 for _, lo, _ in rows)}/{len(rows)}, CI below 0 in "
                  f"{sum(hi < 0 for _, _, hi in rows)}/{len(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

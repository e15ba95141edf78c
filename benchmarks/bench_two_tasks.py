"""Issue 49, item 4: the search on two tasks. `memarch compile --space full --budget 40` (guided, presets
as round 0, the defaults otherwise) on LongMemEval_S and on LoCoMo, one program per seed; then a
transfer table: each task's picks, memp, and memp with today's levers (`LEVERS`), scored on BOTH
tasks' test splits, with paired bootstrap 95% CIs over the test questions.

LongMemEval's search split is its search split's first `--lme-limit` instances (instance split by a
hash of the question id, so the same whichever are loaded), and the compile validates on the first
`--lme-limit` of validation: each instance is a whole ~48-session haystack and a full-space trial
writes every encoder's items, so the compile's split is a subset (docs/benchmarks.md says how much it
costs). The table scores LongMemEval's test split in full (134 instances; `--lme-test-limit` to cut
it) with the 128-token reads of the default model (`all-MiniLM-L6-v2-128`, the embedder the compile
used); LoCoMo's with the default model, dialogue split, answer_span, as `bench_levers_goal.py` does.

    # the compiles (resumable: a seed whose program exists is skipped); spread over processes
    .venv/bin/python benchmarks/bench_two_tasks.py --data ../shared/data --task lme --seeds 0,1,2 --compile-only
    .venv/bin/python benchmarks/bench_two_tasks.py --data ../shared/data --task locomo --seeds 0,1,2 --compile-only
    # the table (compiles what is missing first)
    .venv/bin/python benchmarks/bench_two_tasks.py --data ../shared/data --seeds 0,1,2,3,4

Nothing is tuned on test: each compile searches on its search split and picks on validation; the
table reads test once per architecture (its evaluations are kept in --out and reused).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_full_space import paired  # noqa: E402  (a sibling script)
from bench_levers_goal import LEVERS  # noqa: E402

TASKS = ("lme", "locomo")
LME_EMBEDDER = "all-MiniLM-L6-v2-128"
METRIC = {"lme": "span_or_evidence", "locomo": "answer_span"}


def data_found(args) -> bool:
    """Set ``args.locomo`` and ``args.lme`` from ``--data``; False (and a line) when either is missing."""
    args.locomo = Path(args.data) / "locomo" / "locomo10.json"
    args.lme = Path(args.data) / "longmemeval" / "longmemeval_s.json.gz"
    for path in (args.locomo, args.lme):
        if not path.exists():
            print(f"no data at {path}; skipped")
            return False
    return True


def lme_dir_name(args) -> str:
    """The directory of LongMemEval's compiles: ``lme-48-no-entity`` for ``--lme-limit 48 --lme-exclude entity``."""
    embedder = getattr(args, "lme_embedder", LME_EMBEDDER)
    return (f"lme-{args.lme_limit}" + "".join(f"-no-{m.split(':')[-1]}" for m in args.lme_exclude.split(",") if m)
            + ("" if embedder == LME_EMBEDDER else f"-{embedder}"))


def resources(model: str | None, cache: str | None):
    """Resources with ``model`` (None: the default embedder) and ``cache`` as the cache directory."""
    from memarch.pipeline.embed import Embedder
    from memarch.pipeline.resources import Resources

    embedder = Embedder(model, cache_dir=cache) if model else Embedder(cache_dir=cache)
    return Resources(embedder=embedder, cache_dir=cache)


def compile_args(args, task: str) -> list[str]:
    if task == "lme":
        return ["--benchmark", "longmemeval", "--data", str(args.lme), "--limit", str(args.lme_limit),
                "--embedder", getattr(args, "lme_embedder", LME_EMBEDDER), *(["--exclude", args.lme_exclude] if args.lme_exclude else [])]
    return ["--benchmark", "locomo", "--data", str(args.locomo)]


def compile_seed(args, task: str, seed: int, program: Path, strategy: str = "guided", extra: tuple = ()) -> None:
    """One `memarch compile` as a user runs it (defaults: no pruner; ``extra``: more of its options), its wall
    time kept beside."""
    if program.exists():
        return
    out = program.parent
    study = out / f"optuna-s{seed}.db"
    if study.exists():  # never a second compile over a running (or killed) one's study and log
        sys.exit(f"{task} seed {seed}: {study} exists but {program} does not: a compile of it is running, or "
                 "was killed; wait for it, or delete the .db to start the seed again")
    cmd = [sys.executable, "-m", "memarch", "compile", *compile_args(args, task), "--space", "full",
           "--budget", str(args.budget), "--seeds", "1", "--first-seed", str(seed), "--strategies", strategy,
           "--no-tracking", "--storage", f"sqlite:///{study.resolve()}", "--out", str(out), "--output", str(program),
           *extra]
    print(" ".join(cmd[2:]), flush=True)
    load = os.getloadavg()[0]
    started = time.perf_counter()
    cache = args.lme_cache if task == "lme" else args.locomo_cache
    env = {**os.environ, **({"MEMARCH_CACHE_DIR": str(cache)} if cache else {})}
    with open(out / f"compile-s{seed}.log", "w") as log:
        rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    if rc != 0 or not program.exists():
        sys.exit(f"{task} compile of seed {seed} failed (exit {rc}); see {out / f'compile-s{seed}.log'}")
    timings = out / "timings.json"
    kept = json.loads(timings.read_text()) if timings.exists() else {}
    kept[str(seed)] = {"seconds": round(time.perf_counter() - started, 1), "load_at_start": round(load, 2)}
    timings.write_text(json.dumps(kept, indent=1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="../shared/data", help="shared data directory (locomo/, longmemeval/)")
    ap.add_argument("--seeds", default="0,1,2,3,4", help="comma-separated seeds")
    ap.add_argument("--task", choices=(*TASKS, "both"), default="both", help="whose compiles to run")
    ap.add_argument("--budget", type=int, default=40)
    ap.add_argument("--lme-limit", type=int, default=16, help="LongMemEval instances per split in the compile")
    ap.add_argument("--lme-exclude", default="", metavar="MODULES",
                    help="modules LongMemEval's compiles leave out (--exclude), e.g. entity: its ~2,500 texts "
                    "an instance make a search split past 16 instances, and its picks' test, hours to embed")
    ap.add_argument("--lme-subset", type=int, default=16,
                    help="the first N LongMemEval test instances an architecture with the entity encoder is scored "
                    "on (its texts embedded ahead; default 16)")
    ap.add_argument("--lme-test-limit", type=int, default=None,
                    help="LongMemEval test instances in the table (default: the whole test split)")
    ap.add_argument("--lme-cache", default=None, help="MEMARCH_CACHE_DIR of LongMemEval's runs (default: the usual)")
    ap.add_argument("--locomo-cache", default=None, help="MEMARCH_CACHE_DIR of LoCoMo's runs (default: the usual)")
    ap.add_argument("--partial", action="store_true", help="leave out the seeds whose compile has not finished")
    ap.add_argument("--cached-only", default="", metavar="TASKS",
                    help="e.g. lme: score nothing new on these test splits (lme, lme-subset, locomo); an "
                    "architecture not yet scored there is shown as not scored")
    ap.add_argument("--presets", action="store_true", help="also every LM-free preset on both test splits")
    ap.add_argument("--compile-only", action="store_true", help="run the missing compiles, no table")
    ap.add_argument("--out", default="mlruns/bench/two-tasks", help="programs, studies, logs, evaluations")
    args = ap.parse_args()
    if not data_found(args):
        return 0
    out = Path(args.out)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    tasks = TASKS if args.task == "both" else (args.task,)
    lme_dir = lme_dir_name(args)
    dirs = {t: out / (lme_dir if t == "lme" else t) for t in TASKS}
    programs = {t: {s: dirs[t] / f"seed-{s}.program.json" for s in seeds} for t in TASKS}
    for task in tasks:
        dirs[task].mkdir(parents=True, exist_ok=True)
        for seed, program in programs[task].items():
            if not args.partial:
                compile_seed(args, task, seed, program)
    if args.compile_only:
        return 0
    for task in TASKS:
        missing = [s for s, p in programs[task].items() if not p.exists()]
        if missing and not args.partial:
            sys.exit(f"{task}: no program for seed(s) {missing}: run --task {task} --compile-only first")
        for s in missing:  # --partial: the table of what exists (its evaluations are kept for the full one)
            print(f"{task} seed {s}: no program yet, left out")
            del programs[task][s]

    from memarch.optimizers.evaluators import BenchmarkEvaluator
    from memarch.pipeline.architecture import Architecture
    from memarch.pipeline.presets import preset_architectures

    evaluators = {
        "lme": BenchmarkEvaluator("longmemeval", data_path=str(args.lme), limit=args.lme_test_limit,
                                  resources=resources(LME_EMBEDDER, args.lme_cache), metric=METRIC["lme"]),
        "locomo": BenchmarkEvaluator("locomo", data_path=str(args.locomo), knobs={"split_by": "dialogue"},
                                     resources=resources(None, args.locomo_cache), metric=METRIC["locomo"]),
    }
    # The entity encoder writes ~2,500 texts a LongMemEval_S instance (a turn per entity it names):
    # 335k to embed on the test split. An architecture with it is scored on the first --lme-subset test
    # instances (embedded ahead), and says so; its paired CIs are over those questions.
    evaluators["lme-subset"] = BenchmarkEvaluator("longmemeval", data_path=str(args.lme), limit=args.lme_subset,
                                                  resources=evaluators["lme"].resources, metric=METRIC["lme"])
    saved = out / f"evaluations-lme{args.lme_test_limit or 'all'}.json"
    cache: dict = json.loads(saved.read_text()) if saved.exists() else {}

    def where(arch: Architecture, task: str) -> str:
        return "lme-subset" if task == "lme" and "entity" in arch.encode else task

    def test(arch: Architecture, task: str):
        task = where(arch, task)
        key = f"{arch.key()} @ {task} test"
        if key not in cache and task in args.cached_only.split(","):
            return None
        if key not in cache:
            started = time.perf_counter()
            r = evaluators[task](arch, "test")
            if r.failed:
                sys.exit(f"{arch.key()} on {task} test failed: {r.error}")
            cache[key] = {"per": {o.query_id: o.score for o in r.outcomes}, "score": r.score,
                          "memory_words": (r.cost or {}).get("memory_words"),
                          "seconds": round(time.perf_counter() - started, 1)}
            saved.write_text(json.dumps(cache))
            print(f"  scored {arch.key()} on {task} test: {r.score:.4f} ({cache[key]['seconds']} s)", flush=True)
        return cache[key]

    memp = preset_architectures("conversation")["memp"]
    refs = {"memp": memp, "memp + levers": memp.replace(params={**memp.param_dict, **LEVERS})}
    picks = {t: {s: Architecture.from_dict(json.loads(p.read_text())["architecture"])
                 for s, p in programs[t].items()} for t in TASKS}
    summary = {}
    for on in TASKS:
        base = {name: test(arch, on) for name, arch in refs.items()}
        lg, llo, lhi = paired(base["memp + levers"]["per"], base["memp"]["per"])
        print(f"\n## on {on} test ({METRIC[on]}, {len(base['memp']['per'])} questions): memp {base['memp']['score']:.4f}, "
              f"memp + levers {base['memp + levers']['score']:.4f} ({lg:+.4f} [{llo:+.4f}, {lhi:+.4f}])")
        print(f"| pick of | seed | architecture | test | - memp [95% CI] | - memp + levers [95% CI] | memory_words "
              f"(memp {base['memp']['memory_words'] or 0:,.0f}) |")
        print("|---|---|---|---|---|---|---|")
        for by in TASKS:
            for seed, arch in picks[by].items():
                r = test(arch, on)
                if r is None:  # --cached-only
                    print(f"| {by} | {seed} | `{arch.key()}` | not scored in this run (--cached-only) | | | |")
                    continue
                g, lo, hi = paired(r["per"], base["memp"]["per"])
                lg, llo, lhi = paired(r["per"], base["memp + levers"]["per"])
                summary.setdefault((by, on), []).append((seed, g, lo, hi, lg, llo, lhi, r["score"]))
                shown = arch.key() + (f" (first {args.lme_subset} test instances)" if where(arch, on) != on else "")
                print(f"| {by} | {seed} | `{shown}` | {r['score']:.4f} | {g:+.4f} [{lo:+.4f}, {hi:+.4f}] | "
                      f"{lg:+.4f} [{llo:+.4f}, {lhi:+.4f}] | {r['memory_words'] or 0:,.0f} |", flush=True)
        own, other = on, next(t for t in TASKS if t != on)
        both = [s for s in seeds if s in picks[own] and s in picks[other]
                and test(picks[own][s], on) is not None and test(picks[other][s], on) is not None]
        diffs = [paired(test(picks[own][s], on)["per"], test(picks[other][s], on)["per"]) for s in both]
        print(f"own pick - {other}'s pick, seed by seed: " + ", ".join(
            f"s{s} {d:+.4f} [{lo:+.4f}, {hi:+.4f}]" for s, (d, lo, hi) in zip(both, diffs)))
    if args.presets:
        from memarch.pipeline.presets import presets_for
        from memarch.pipeline.space import ArchitectureSpace

        print("\n## every LM-free preset on both test splits (- memp, paired 95% CI)")
        print(f"| preset | architecture | {' | '.join(f'{t} test | - memp' for t in TASKS)} |")
        print("|---|---|" + "---|---|" * len(TASKS))
        for name, arch in presets_for(ArchitectureSpace("conversation", lm_available=False)).items():
            cells = []
            for on in TASKS:
                r, ref = test(arch, on), test(refs["memp"], on)
                if r is None:
                    cells.append("not scored | ")
                    continue
                g, lo, hi = paired(r["per"], ref["per"])
                note = f" (first {args.lme_subset})" if where(arch, on) != on else ""
                cells.append(f"{r['score']:.4f}{note} | {g:+.4f} [{lo:+.4f}, {hi:+.4f}]")
            print(f"| {name} | `{arch.key()}` | {' | '.join(cells)} |", flush=True)
    print()
    for (by, on), rows in summary.items():
        gains = [r[1] for r in rows]
        print(f"{by}'s picks on {on} test: median - memp {statistics.median(gains):+.4f}, CI above 0 in "
              f"{sum(r[2] > 0 for r in rows)}/{len(rows)}; median - memp + levers "
              f"{statistics.median(r[4] for r in rows):+.4f}, CI above 0 in {sum(r[5] > 0 for r in rows)}/{len(rows)}")
    if ("lme", "lme") not in summary or ("locomo", "locomo") not in summary:
        return 0
    lme_own = summary[("lme", "lme")]
    print(f"goal (LongMemEval: the pick beats memp with the CI above 0 in >= 4 of {len(lme_own)}): "
          f"{'MET' if sum(r[2] > 0 for r in lme_own) >= 4 else 'NOT MET'}")
    loc_own = summary[("locomo", "locomo")]
    print(f"goal (LoCoMo does not regress: median gain over memp >= +0.086): "
          f"{'MET' if statistics.median(r[1] for r in loc_own) >= 0.086 else 'NOT MET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

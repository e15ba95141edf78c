"""The search benchmark (issue 6). (1) Generated benchmark: evaluate every architecture of the
LM-free valid space once (the exhaustive optimum; results kept in a JSON table so a sweep can be
resumed), then run random, TPE and guided on that table over >= 5 seeds and report the median
number of trials each needs to reach 99% of the optimum (goal: guided <= 1/3 of random, <= 1/2 of
TPE). (2) LoCoMo: the test score of each strategy's pick at an equal budget.

    .venv/bin/python benchmarks/bench_search.py --data ../shared/data
    .venv/bin/python benchmarks/bench_search.py --skip-locomo --knob conversations=3 --knob sessions=6
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


class TableMetric:
    """The swept results as a metric: every architecture's search-split result, looked up."""

    def __init__(self, results: dict):
        self.results = results

    def __call__(self, arch, data="search"):
        from memarch.optimizers.history import expand

        return expand(arch, self.results[arch.key()])


def sweep(metric, space, path: Path, limit_s: float | None) -> dict:
    from memarch.optimizers.history import compact

    done = json.loads(path.read_text()) if path.exists() else {}
    todo = [a for a in space.enumerate() if a.key() not in done]
    t0 = time.time()
    print(f"sweep: {len(done)} cached, {len(todo)} to evaluate ({space.count_valid()} valid LM-free)", flush=True)
    for i, arch in enumerate(todo):
        r = metric(arch, "search")
        if not r.failed:
            done[arch.key()] = compact(r)
        if i % 25 == 0 or i == len(todo) - 1:
            path.write_text(json.dumps(done))
            print(f"  {len(done)}/{space.count_valid()} evaluated, {time.time() - t0:.0f} s", flush=True)
        if limit_s and time.time() - t0 > limit_s:
            path.write_text(json.dumps(done))
            print(f"  stopped after {limit_s:.0f} s; rerun to continue the sweep", flush=True)
            break
    return done


def trials_needed(strategy: str, seed: int, table: TableMetric, space, target: float, budget: int) -> int | None:
    from memarch.optimizers.compare import trials_to_target
    from memarch.optimizers.search import Search
    from memarch.optimizers.space import SearchSpace
    from memarch.optimizers.strategies import make_sampler
    from memarch.optimizers.study import make_storage, open_study

    ss = SearchSpace(space)
    study = open_study(f"{strategy}-{seed}", make_storage(None), make_sampler(strategy, ss, seed=seed),
                       space=ss.describe())
    h = Search(table, ss, budget=budget).run(study)
    return trials_to_target(h.best_so_far(), target)


def part_generated(args) -> None:
    import optuna

    from memarch.optimizers.metric import BenchmarkMetric
    from memarch.pipeline.space import ArchitectureSpace

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # Default: a small generated benchmark, so that the exhaustive sweep fits in about half an hour.
    knobs = {k: int(v) for k, _, v in (kv.partition("=") for kv in args.knob)} or {"conversations": 2, "sessions": 5}
    metric = BenchmarkMetric("generated", knobs=knobs, limit=args.limit)
    space = ArchitectureSpace(metric.family, lm_available=False)
    path = Path(args.table or f"mlruns/bench_search_sweep_{'_'.join(f'{k}{v}' for k, v in sorted(knobs.items())) or 'default'}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    results = sweep(metric, space, path, args.sweep_seconds)
    if len(results) < space.count_valid():
        # The optimum is of the evaluated sub-space: the strategies search only that, too.
        print(f"partial sweep: strategies restricted to the {len(results)} evaluated architectures")
    table = TableMetric(results)
    keys = set(results)

    class Sub(type(space)):
        def enumerate(self, *, valid_only=True):
            return (a for a in super().enumerate(valid_only=valid_only) if a.key() in keys)

        def violations(self, arch):
            v = super().violations(arch)
            if not v and arch.canonical().key() not in keys:
                from memarch.pipeline.space import Violation
                return [Violation("not-swept", "not in the evaluated sub-space")]
            return v

    sub = Sub(space.family, lm_available=False)
    optimum_key, optimum = max(((k, v["objective"]) for k, v in results.items()), key=lambda kv: kv[1])
    target = 0.99 * optimum
    n_at_target = sum(1 for v in results.values() if v["objective"] >= target)
    print(f"exhaustive optimum {optimum:.4f} ({optimum_key}); {n_at_target} of {len(results)} architectures "
          f"reach 99% ({target:.4f})")
    budget = args.budget
    rows = {}
    for strategy in ("random", "tpe", "guided"):
        hits = [trials_needed(strategy, s, table, sub, target, budget) for s in range(args.seeds)]
        vals = [h if h is not None else budget + 1 for h in hits]
        rows[strategy] = statistics.median(vals)
        print(f"  {strategy:<8} trials to 99% of optimum: median {rows[strategy]:g} "
              f"(per seed {vals}; {sum(h is not None for h in hits)}/{len(hits)} reached within {budget})", flush=True)
    print(f"ratio guided/random {rows['guided'] / rows['random']:.2f} (goal <= 0.33); "
          f"guided/tpe {rows['guided'] / rows['tpe']:.2f} (goal <= 0.50)")


def part_locomo(args) -> None:
    import optuna

    from memarch.optimizers.compile import MemarchOptimizer
    from memarch.optimizers.metric import BenchmarkMetric, CachedMetric
    from memarch.pipeline.space import ArchitectureSpace

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    data = Path(args.data) / "locomo"
    if not data.exists():
        print(f"LoCoMo skipped: no data at {data}")
        return
    metric = CachedMetric(BenchmarkMetric("locomo", data_path=str(data), limit=args.locomo_limit,
                                          knobs={"conversations": args.locomo_conversations}))
    space = ArchitectureSpace(metric.family, lm_available=False)
    print(f"LoCoMo ({args.locomo_conversations} conversations, {args.locomo_limit or 'all'} questions per split), "
          f"budget {args.locomo_budget} trials each:")
    for strategy in ("random", "tpe", "guided"):
        t0 = time.time()
        opt = MemarchOptimizer(metric, strategy=strategy, budget=args.locomo_budget, seed=0, finalists=2)
        opt.compile(space)
        r = opt.report
        print(f"  {strategy:<8} pick {r.architecture.key():<45} search {r.search_score:.4f} "
              f"validation {r.validation_score:.4f} test {r.test_score:.4f}  ({time.time() - t0:.0f} s)", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="../shared/data")
    p.add_argument("--knob", action="append", default=[],
                   help="generated benchmark knob KEY=INT (default conversations=2, sessions=5)")
    p.add_argument("--limit", type=int, default=None, help="questions per split of the generated benchmark")
    p.add_argument("--table", default=None, help="sweep results JSON (resumable)")
    p.add_argument("--sweep-seconds", type=float, default=None, help="stop the sweep after this long")
    p.add_argument("--seeds", type=int, default=7)
    p.add_argument("--budget", type=int, default=200, help="trial cap per strategy run on the table")
    p.add_argument("--skip-generated", action="store_true")
    p.add_argument("--skip-locomo", action="store_true")
    p.add_argument("--locomo-conversations", type=int, default=2)
    p.add_argument("--locomo-limit", type=int, default=60)
    p.add_argument("--locomo-budget", type=int, default=10)
    args = p.parse_args(argv)
    if not args.skip_generated:
        part_generated(args)
    if not args.skip_locomo:
        part_locomo(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

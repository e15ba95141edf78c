"""How much the bag-of-words `answer_recall` flatters memory next to the strict `answer_span`:
per benchmark, preset and category, the share of queries where bag recall >= 0.5 (a success
under the bag) but the span is 0, the reverse (span >= 0.5, bag < 0.5), both means and success
rates; plus the cost of one `answer_span` call on real LoCoMo contexts.

    .venv/bin/python benchmarks/bench_metrics.py --data ../shared/data

Benchmarks: LoCoMo (all 10 conversations), bAbI (test part, first --babi-stories stories of each of
the 20 tasks), generated (default knobs); split "all", answerable questions only (no reader).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

PRESETS = ("memgpt", "mem0", "reflexion")  # turn | vector | hybrid | lightweight, fact | ... | json_full, summary


def flips(outcomes) -> dict[str, float]:
    """Shares of queries by how the two objectives disagree, and both means and success rates."""
    n = len(outcomes)
    span = [o.evidence["answer_span"] for o in outcomes]
    bag = [o.evidence["answer_recall"] for o in outcomes]
    return {
        "n": n,
        "bag": statistics.fmean(bag) if n else 0.0, "span": statistics.fmean(span) if n else 0.0,
        "bag_ok": sum(b >= 0.5 for b in bag) / n if n else 0.0,
        "span_ok": sum(s >= 0.5 for s in span) / n if n else 0.0,
        "bag_only": sum(b >= 0.5 and s == 0 for b, s in zip(bag, span)) / n if n else 0.0,
        "span_only": sum(s >= 0.5 and b < 0.5 for b, s in zip(bag, span)) / n if n else 0.0,
    }


HEAD = (f"{'benchmark':<10}{'preset':<11}{'category':<30}{'n':>6}{'bag mean':>10}{'span mean':>10}"
        f"{'bag>=.5':>9}{'span>=.5':>9}{'bag>=.5,span=0':>16}{'span>=.5,bag<.5':>17}")


def row(bench: str, preset: str, category: str, f: dict) -> str:
    return (f"{bench:<10}{preset:<11}{category:<30}{f['n']:>6}{f['bag']:>10.3f}{f['span']:>10.3f}"
            f"{f['bag_ok']:>9.3f}{f['span_ok']:>9.3f}{f['bag_only']:>16.3f}{f['span_only']:>17.3f}")


def benchmarks(data: Path, babi_stories: int, only: set[str]):
    from memarch.benchmarks.babi import BAbI
    from memarch.benchmarks.generated import GeneratedConversations
    from memarch.benchmarks.locomo import LoCoMo

    if not only or "locomo" in only:
        yield "locomo", LoCoMo(data / "locomo")
    if not only or "babi" in only:
        yield "babi", BAbI(data / "babi", part="test", stories=babi_stories)
    if not only or "generated" in only:
        yield "generated", GeneratedConversations()


class Recorder:
    """Wraps the registry's `answer_span` context metric to keep every (gold, context, budget) it sees."""

    def __init__(self, fn):
        self.fn, self.calls = fn, []

    def __call__(self, answer, evidence, context, sources, context_budget):
        self.calls.append((answer, context, context_budget))
        return self.fn(answer, evidence, context, sources, context_budget)


def speed(calls: list, rounds: int = 3) -> dict[str, float]:
    """µs per call: answer_recall; answer_span with no line cache (every context line normalised
    afresh, gold answers cached), from empty caches over the trial's calls in order (lines that
    recur within the trial hit), and with every line cached."""
    from memarch.benchmarks.metrics import answer_span as span_module
    from memarch.benchmarks.metrics.scores import answer_recall

    cached_line = span_module._normalised_line

    def timed(fn, clear: bool = False) -> float:
        best = float("inf")
        for _ in range(rounds):
            if clear:
                span_module.gold_parts.cache_clear()
                cached_line.cache_clear()
            t0 = time.perf_counter()
            for a, c, b in calls:
                fn(a, c, b)
            best = min(best, time.perf_counter() - t0)
        return best / len(calls) * 1e6

    out = {"recall": timed(answer_recall)}
    span_module._normalised_line = cached_line.__wrapped__
    try:
        out["span_uncached"] = timed(span_module.answer_span)
    finally:
        span_module._normalised_line = cached_line
    out["span_trial"] = timed(span_module.answer_span, clear=True)
    out["span_warm"] = timed(span_module.answer_span)
    out["words"] = statistics.fmean(len(c.split()) for _, c, _ in calls)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="../shared/data", help="shared data directory (locomo/, babi/)")
    p.add_argument("--benchmarks", default="", help="comma-separated subset of locomo,babi,generated")
    p.add_argument("--presets", default=",".join(PRESETS))
    p.add_argument("--babi-stories", type=int, default=10, help="first N test stories of each bAbI task")
    p.add_argument("--budget", type=int, default=200)
    p.add_argument("--embedder", default="all-MiniLM-L6-v2", help="'hash' for a model-free run")
    p.add_argument("--no-speed", action="store_true", help="skip the per-call timing")
    args = p.parse_args(argv)

    import faiss

    faiss.omp_set_num_threads(1)  # small per-namespace indexes: threads only contend
    from memarch.benchmarks.evaluation.evaluate import evaluate
    from memarch.benchmarks.metrics.registry import CONTEXT_METRICS
    from memarch.pipeline.presets import get_preset
    from memarch.pipeline.embed import Embedder
    from memarch.pipeline.resources import Resources
    from memarch.pipeline.space import ArchitectureSpace

    space = ArchitectureSpace("conversation", lm_available=False)
    presets = {name: get_preset(name, space) for name in args.presets.split(",") if name}
    resources = Resources(embedder=Embedder(args.embedder))
    only = {s.strip() for s in args.benchmarks.split(",") if s.strip()}
    totals, cats, recorded = [], [], []
    for bench_name, bench in benchmarks(Path(args.data), args.babi_stories, only):
        print(f"{bench_name}: {bench.stats()}", flush=True)
        for name, arch in presets.items():
            recorder = Recorder(CONTEXT_METRICS["answer_span"])
            CONTEXT_METRICS["answer_span"] = recorder
            try:
                t0 = time.perf_counter()
                result = evaluate(arch, bench, split="all", resources=resources, context_budget=args.budget,
                                  metric="answer_span")
            finally:
                CONTEXT_METRICS["answer_span"] = recorder.fn
            if result.failed:
                print(f"  {name} ({arch.key()}) FAILED: {result.error}", file=sys.stderr)
                return 1
            print(f"  {name:<10} {arch.key():<40} span {result.score:.4f}  "
                  f"bag {result.scores['answer_recall']:.4f}  ({time.perf_counter() - t0:.1f} s)", flush=True)
            if bench_name == "locomo" and name == "memgpt":
                recorded = recorder.calls
            totals.append(row(bench_name, name, "(all)", flips(result.outcomes)))
            by_cat = defaultdict(list)
            for o in result.outcomes:
                by_cat[o.category].append(o)
            cats.extend(row(bench_name, name, c, flips(v)) for c, v in sorted(by_cat.items()))
    print(f"\nsplit all, answerable questions, B={args.budget} words; bAbI: test part, first "
          f"{args.babi_stories} stories of each task")
    print(HEAD)
    print("-" * len(HEAD))
    print("\n".join(totals))
    print("\nper category")
    print(HEAD)
    print("-" * len(HEAD))
    print("\n".join(cats))
    if recorded and not args.no_speed:
        s = speed(recorded)
        print(f"\ncost per call over the {len(recorded)} contexts of the LoCoMo memgpt trial (mean {s['words']:.0f} "
              f"words; best of 3 passes): answer_recall {s['recall']:.1f} µs; answer_span "
              f"{s['span_uncached']:.1f} µs without the line cache, {s['span_trial']:.1f} µs from empty caches "
              f"(lines recurring within the trial hit), {s['span_warm']:.1f} µs with every line cached")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Near-duplicates and content words on a conversation benchmark: for each manager, how many items
it superseded as duplicates / merges, how many of those said something (a number, date, name,
code) their survivor does not, and the score — BEFORE (the content-word rule switched off through
`memarch.modules.managers._content.ENABLED`, this script's only use of it) and AFTER, side by side.

    nice -n 10 .venv/bin/python benchmarks/bench_dedup.py --data ../shared/data/locomo/locomo10.json \\
        --split validation [--encoder turn+fact] [--dedup 0.9] [--budgets 10%] [--json out.json]

Decisions are taken on the search / validation splits, never on test.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))
from bench_spread import paired_interval  # noqa: E402  (a sibling script)

MANAGERS = ("lightweight", "json_full", "tool_manager", "graph_consolidate")
# How a superseded item left, from the reason of its `superseded_by` lineage entry.
KINDS = (("same text", "exact repeat"), ("budget: near-duplicates", "budget merge"),
         ("(cosine", "near-duplicate on insert"), ("cluster merge", "cluster merge"), ("budget: conflict", "key upsert"), ("value for key", "key upsert"),
         ("stored value for key", "key upsert"), ("compressed", "budget compress"),
         ("generalised", "budget generalise"))
MERGES = ("exact repeat", "near-duplicate on insert", "cluster merge", "budget merge")


def kind_of(reason: str) -> str:
    return next((k for needle, k in KINDS if needle in reason), "other")


def superseded(store) -> list[tuple[str, int, int]]:
    """(kind, lost, differs) per superseded item: ``lost`` when it holds a content word its survivor
    does not say, ``differs`` when their content words are not the same (a subset merged into its
    superset differs but loses nothing)."""
    from memarch.modules.managers._content import content_words, missing_content

    out = []
    for ns in store.namespaces():
        for it in store.tombstones(ns):
            if it.status != "superseded":
                continue
            entry = next(e for e in reversed(it.lineage) if e.action == "superseded_by")
            survivor = store.get(entry.related[0], ns, include_deleted=True) if entry.related else None
            if survivor is None:
                out.append((kind_of(entry.reason), 0, 0))
                continue
            lost = bool(missing_content(survivor.text, it.text))
            differs = content_words(survivor.text) != content_words(it.text)
            out.append((kind_of(entry.reason), int(lost), int(differs)))
    return out


def run(arch, bench, split: str, resources, context_budget: int, config: dict | None, rule: bool):
    from memarch.benchmarks.evaluation.evaluate import evaluate
    from memarch.benchmarks.evaluation.settings import default_top_k
    from memarch.modules.managers import _content
    from memarch.pipeline.program import MemoryProgram

    _content.ENABLED = rule
    try:
        program = MemoryProgram(arch, resources=resources, top_k=default_top_k(context_budget),
                                context_budget=context_budget, config=config)
        result = evaluate(program, bench, split=split, resources=resources, context_budget=context_budget)
    finally:
        _content.ENABLED = True
    rows = superseded(program.store)
    merged = [r for r in rows if r[0] in MERGES]
    return {"score": result.score, "scores": [o.score for o in result.outcomes],
            "items": result.cost.get("memory_items"), "superseded": len(rows),
            "merged": len(merged), "merged_lost": sum(r[1] for r in merged),
            "merged_differs": sum(r[2] for r in merged), "by_kind": dict(Counter(r[0] for r in rows)),
            "lost_by_kind": dict(Counter(r[0] for r in rows if r[1])), "wall_s": result.cost.get("wall_s")}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--benchmark", default="locomo")
    p.add_argument("--data", default=None)
    p.add_argument("--split", default="validation")
    p.add_argument("--encoder", default="turn", help="encoders, '+'-joined (turn, turn+fact, ...)")
    p.add_argument("--store", default="vector")
    p.add_argument("--retriever", default="hybrid")
    p.add_argument("--managers", default=",".join(MANAGERS))
    p.add_argument("--dedup", type=float, default=None,
                   help="set the manage.dedup_threshold knob (0.8-1.0; default: the preset's, 0.98 for conversations)")
    p.add_argument("--budgets", default="", help="also at these memory budgets (as --memory-budget takes them)")
    p.add_argument("--context-budget", type=int, default=200)
    p.add_argument("--embedder", default="all-MiniLM-L6-v2")
    p.add_argument("--json", default=None, help="write every cell here")
    args = p.parse_args(argv)

    import faiss

    faiss.omp_set_num_threads(1)
    from memarch.benchmarks import get_benchmark
    from memarch.benchmarks.evaluation.memory_budget import MemoryBudget
    from memarch.pipeline.architecture import Architecture
    from memarch.pipeline.embed import Embedder
    from memarch.pipeline.resources import Resources

    bench = get_benchmark(args.benchmark, args.data)
    resources = Resources(embedder=Embedder(args.embedder))
    budgets = [None] + [MemoryBudget.resolve(s, bench) for s in args.budgets.split(",") if s.strip()]
    encoders = tuple(args.encoder.split("+"))
    print(f"{args.benchmark} [{args.split}]: {bench.split(args.split).stats()}; metric answer_span, "
          f"context B={args.context_budget}, embedder {args.embedder}")
    cells = []
    for b in budgets:
        for m in args.managers.split(","):
            params = {"manage.dedup_threshold": args.dedup} if args.dedup is not None else {}
            arch = Architecture(encoders, "graph", "graph", m, params) if m == "graph_consolidate" \
                else Architecture(encoders, args.store, args.retriever, m, params)
            before = run(arch, bench, args.split, resources, args.context_budget, b.config() if b else None, False)
            after = run(arch, bench, args.split, resources, args.context_budget, b.config() if b else None, True)
            lo, hi = paired_interval(after["scores"], before["scores"])
            cells.append({"architecture": arch.key(), "budget": b.spec if b else "unlimited", "before": before,
                          "after": after, "delta_interval": [lo, hi]})
            print(f"  {arch.key():<34} {cells[-1]['budget']:>9}  before {json.dumps({k: v for k, v in before.items() if k != 'scores'})}",
                  flush=True)
            print(f"  {'':<34} {'':>9}  after  {json.dumps({k: v for k, v in after.items() if k != 'scores'})}",
                  flush=True)
    print()
    print("| architecture | memory budget | merged before (lost a content word) | merged after (lost) | "
          "superseded before / after | items before / after | answer_span before | after | after - before, 95% paired bootstrap |")
    print("|---|---|---|---|---|---|---|---|---|")
    for c in cells:
        b, a = c["before"], c["after"]
        lo, hi = c["delta_interval"]
        print(f"| {c['architecture']} | {c['budget']} | {b['merged']} ({b['merged_lost']}) | {a['merged']} "
              f"({a['merged_lost']}) | {b['superseded']} / {a['superseded']} | {b['items']:g} / {a['items']:g} | "
              f"{b['score']:.4f} | {a['score']:.4f} | {a['score'] - b['score']:+.4f} "
              f"[{lo:+.4f}, {hi:+.4f}] |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(cells, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The levers of issue 23, side by side: one architecture's write pass on a LoCoMo (or bAbI) split, read by
several retriever settings (packing, time-aware, entity-keyed, query expansion), each scored the
way `evaluate` scores it, with the paired difference to the first setting and its 95% bootstrap
interval over the questions. Reads never change memory, so every setting reads the same memory.

    .venv/bin/python benchmarks/bench_levers.py --data ../shared/data --split validation
    .venv/bin/python benchmarks/bench_levers.py --preset memp --split search \\
        --variant base: --variant time=time_weight=1 --variant packed=pack=1,time_weight=1

Tune on search / validation; run ``--split test`` once, for the settings already chosen.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_full_space import paired  # noqa: E402  (a sibling script)

DEFAULT_VARIANTS = ["items:", "sentences:pack=1", "time:time_weight=1", "entity:entity_weight=1",
                    "recency:recency_weight=0.5", "window:pack=2", "sentences+time:pack=1,time_weight=1",
                    "sentences+entity:pack=1,entity_weight=1"]


def parse_variant(text: str) -> tuple[str, dict[str, float | int]]:
    """``name:k=v,k=v`` -> (name, config)."""
    name, _, body = text.partition(":")
    config: dict[str, float | int] = {}
    for kv in filter(None, body.split(",")):
        k, _, v = kv.partition("=")
        config[k.strip()] = float(v) if "." in v else int(v)
    return name, config


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="../shared/data", help="shared data directory (locomo/, babi/ inside)")
    ap.add_argument("--benchmark", default="locomo", choices=("locomo", "babi"))
    ap.add_argument("--preset", default="memp", help="a preset name, or an architecture key enc+enc|store|retriever|manager")
    ap.add_argument("--params", default="", help="knobs of the architecture itself, k=v,k=v (e.g. encode:turn.window=3)")
    ap.add_argument("--split", default="validation", choices=("search", "validation", "test"))
    ap.add_argument("--variant", action="append", default=None, metavar="NAME:K=V,...",
                    help="retriever settings to read with (repeatable; the first is the reference)")
    ap.add_argument("--context-budget", type=int, default=200)
    ap.add_argument("--json", default=None, help="also write per-question scores here")
    args = ap.parse_args()
    path = Path(args.data) / ("locomo/locomo10.json" if args.benchmark == "locomo" else "babi")
    if not path.exists():
        print(f"no {args.benchmark} data at {path}; skipped")
        return 0

    from memarch.benchmarks.evaluation.settings import EvaluationSettings, default_top_k
    from memarch.benchmarks.evaluation.stream import run_stream
    from memarch.benchmarks import get_benchmark
    from memarch.pipeline.architecture import Architecture
    from memarch.pipeline.presets import get_preset
    from memarch.pipeline.program import MemoryProgram
    from memarch.pipeline.resources import Resources
    from memarch.pipeline.space import ArchitectureSpace

    space = ArchitectureSpace("conversation", lm_available=False)
    if "|" in args.preset:
        enc, store, retr, man = args.preset.split("|")
        arch = Architecture(tuple(enc.split("+")), store, retr, man)
    else:
        arch = get_preset(args.preset, space)
    arch = arch.replace(params={**arch.param_dict, **parse_variant(f"x:{args.params}")[1]})
    arch = space.validate(arch)
    variants = [parse_variant(v) for v in (args.variant or DEFAULT_VARIANTS)]
    bench = get_benchmark(args.benchmark, path, split_by="dialogue").split(args.split)
    resources = Resources()
    top_k = default_top_k(args.context_budget)
    program = MemoryProgram(arch, resources=resources, top_k=top_k, context_budget=args.context_budget)
    retriever_cls = type(program.retriever)
    base_config = dict(program.retriever.config)
    readers = []
    for _, config in variants:
        retriever = retriever_cls(resources, **{**base_config, **config})
        readers.append(lambda q, *, top_k=None, context_budget=None, r=retriever:
                       r.retrieve(q, program.store, top_k=top_k or program.top_k,
                                  context_budget=context_budget if context_budget is not None else args.context_budget))
    started = time.perf_counter()
    settings = EvaluationSettings(context_budget=args.context_budget, top_k=top_k, metric="answer_span")
    results = run_stream(program, bench, settings, readers=readers)
    wall = time.perf_counter() - started
    print(f"{arch.key()} on {args.benchmark} {args.split} ({int(results[0].scores['questions'])} questions), B = "
          f"{args.context_budget}, top_k {program.top_k}; one write pass, {len(readers)} readers, {wall:.0f} s")
    ref = {o.query_id: o.score for o in results[0].outcomes}
    cats = ("temporal", "single-hop", "multi-hop") if args.benchmark == "locomo" else ()
    print("| setting | answer_span | - first [95% CI] | evidence recall | hit@1 | ndcg@5 |"
          + "".join(f" {c} |" for c in cats))
    print("|---" * (6 + len(cats)) + "|")
    dump = {}
    for (name, config), r in zip(variants, results):
        per = {o.query_id: o.score for o in r.outcomes}
        d, lo, hi = paired(per, ref)
        s, c = r.scores, r.per_category
        print(f"| {name} `{','.join(f'{k}={v}' for k, v in config.items()) or 'defaults'}` | {r.score:.4f} | "
              f"{d:+.4f} [{lo:+.4f}, {hi:+.4f}] | {s.get('evidence_recall', 0):.4f} | {s.get('hit@1', 0):.4f} | "
              f"{s.get('ndcg@5', 0):.4f} |" + "".join(f" {c.get(k, 0):.3f} |" for k in cats), flush=True)
        dump[name] = {"config": config, "scores": {o.query_id: o.score for o in r.outcomes}}
    if args.json:
        Path(args.json).write_text(json.dumps({"architecture": arch.key(), "split": args.split, "variants": dump}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

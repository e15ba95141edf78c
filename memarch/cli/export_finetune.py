"""``memarch export-finetune``: chat-format JSONL of a chosen program's memory-module calls (encoder
input -> items written, manager decisions) on the search split, kept only when what they wrote was
retrieved for queries that succeeded; the counts of what was kept and dropped, and why."""
from __future__ import annotations

from pathlib import Path

from memarch.errors import MemarchError

COMMAND = "export-finetune"
HELP = "export a program's memory-module calls with successful provenance as fine-tuning JSONL (search split)"
DEFAULT_RUNS = "mlruns/memarch"  # where `memarch compile` saves <study>.program.json (its --out)


def add_arguments(p) -> None:
    from memarch.optimizers.finetune.format import ADAPTERS

    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--study", default=None, metavar="NAME",
                        help="the program a `memarch compile` study chose (RUNS/NAME.program.json)")
    source.add_argument("--program", default=None, metavar="FILE", help="a saved program JSON")
    p.add_argument("--runs", default=DEFAULT_RUNS, metavar="DIR",
                   help=f"where compile saved the study's program (its --out; default {DEFAULT_RUNS})")
    p.add_argument("--benchmark", default=None,
                   help="benchmark to run on (default: the one the program was scored on)")
    p.add_argument("--data", default=None, help="dataset path (locomo, babi, longmemeval; default: the recorded one)")
    p.add_argument("--out", required=True, metavar="FILE.jsonl", help="the JSONL file to write")
    p.add_argument("--min-score", type=float, default=None, metavar="X",
                   help="keep only pairs whose queries scored at least X on average (0..1)")
    p.add_argument("--limit", type=int, default=None, help="only the first N questions or tasks of the search split")
    p.add_argument("--adapter", default="json", choices=ADAPTERS,
                   help="prompt layout: json (what memarch's modules send their LM; default) or chat "
                        "(DSPy's ChatAdapter, BootstrapFinetune's default)")


def _program_file(args) -> str:
    if args.program is not None:
        path = Path(args.program)
        if not path.is_file():
            raise MemarchError(f"--program {args.program}: no such file")
        return str(path)
    path = Path(args.runs) / f"{args.study}.program.json"
    if not path.is_file():
        raise MemarchError(f"--study {args.study}: no saved program at {path} (memarch compile saves "
                           "OUT/<study>.program.json; give --runs OUT or --program FILE)")
    return str(path)


def _check(args) -> None:
    """Bad options stop here, before any work: one line, exit 2."""
    if args.min_score is not None and not 0.0 <= args.min_score <= 1.0:
        raise MemarchError(f"--min-score must be in [0, 1], not {args.min_score:g}")
    if args.limit is not None and args.limit < 1:
        raise MemarchError(f"--limit must be a positive integer, not {args.limit}")
    out = Path(args.out)
    if out.is_dir():
        raise MemarchError(f"--out {args.out}: is a directory (expected a .jsonl file path)")
    if not out.parent.exists():
        raise MemarchError(f"--out {args.out}: directory {out.parent} does not exist")


def _benchmark(args, saved):
    from memarch.benchmarks import BENCHMARKS, get_benchmark, recorded_benchmark

    rec = saved.record
    name = args.benchmark or (rec.benchmark if rec else None)
    if name is None:
        raise MemarchError(f"{saved.path} has no evaluation record: give --benchmark")
    if name not in BENCHMARKS:
        raise MemarchError(f"--benchmark {name!r}: expected one of {', '.join(BENCHMARKS)}")
    if args.data is not None and name in ("generated", "textworld"):
        raise MemarchError(f"--data is for locomo and babi; {name} needs none")
    if rec is not None and rec.benchmark == name:
        return recorded_benchmark(rec, data=args.data)  # the recorded data, knobs and split
    return get_benchmark(name, args.data)


def run(args) -> int:
    from memarch.cli._saved_program import SavedProgram
    from memarch.optimizers.finetune.export import SPLIT, export_finetune
    from memarch.benchmarks.metrics.registry import LM_METRICS

    _check(args)
    path = _program_file(args)
    saved = SavedProgram.read(path)
    bench = _benchmark(args, saved)
    rec = saved.record
    metric = rec.metric if rec is not None and rec.benchmark == bench.name else None
    if metric in LM_METRICS or metric == "task_score":
        metric = None  # LM-scored picks are judged by the LM-free default here; said below
    program = saved.build(None)  # fresh memory; the saved embedder (hash for tests) is kept
    source = f"study {args.study}" if args.study else path
    export = export_finetune(program, bench, min_score=args.min_score, limit=args.limit or (rec.limit if rec else None),
                             metric=metric, adapter=args.adapter, source=source)
    export.write(args.out)
    print(f"program: {saved.architecture.key()} ({source}); split: {SPLIT} (never test)")
    if rec is not None and rec.metric != export.result.metadata.get("metric") and rec.metric != "task_score":
        print(f"  note: the program was scored with {rec.metric}; without an LM reader the provenance is "
              f"judged with {export.result.metadata.get('metric')}")
    for line in export.describe():
        print(line)
    print(f"wrote {len(export.lines)} pairs to {args.out}")
    return 0

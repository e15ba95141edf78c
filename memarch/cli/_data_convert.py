"""``memarch data convert --from NAME [IN] --out FILE.jsonl``: any benchmark with dialogues (or
recorded tasks) loaded by name from its data path, written in memarch's JSONL format, then checked."""
from __future__ import annotations


from memarch.cli._knobs import add_knob_argument, parse_knobs
from memarch.errors import MemarchError


def add_convert_arguments(p) -> None:
    p.add_argument("--from", dest="source", required=True,
                   help="the benchmark the input is in: locomo, babi, longmemeval, ... (any benchmark name)")
    p.add_argument("input", nargs="?", default=None, help="its data path (as --data of that benchmark)")
    p.add_argument("--out", required=True, help="the .jsonl file to write (atomically)")
    add_knob_argument(p)
    p.set_defaults(_action=run_convert)


def run_convert(args) -> int:
    from pathlib import Path

    from memarch.benchmarks import available, benchmark_class, get_benchmark
    from memarch.benchmarks.base import COLLECT_DEPLOY
    from memarch.benchmarks.formats.jsonl_check import read_data
    from memarch.benchmarks.formats.jsonl_records import benchmark_records, write_records

    if args.source not in available():
        raise MemarchError(f"--from {args.source!r}: unknown benchmark (known: {', '.join(available())})")
    source = benchmark_class(args.source)
    if source.protocol == COLLECT_DEPLOY and source.recorded is None:  # its agent plays live
        raise MemarchError(f"--from {args.source}: an agent benchmark played live has no recorded trajectories "
                           "to convert; write its episodes as task records (docs/data.md)")
    out = Path(args.out)
    if out.is_dir():
        raise MemarchError(f"--out {out}: is a directory (expected a .jsonl file path)")
    if args.input is not None and out.exists() and out.resolve() == Path(args.input).resolve():
        raise MemarchError(f"--out {out}: is the input file")
    knobs = parse_knobs(args.knob)
    bench = get_benchmark(args.source, args.input, **knobs)
    lines = write_records(out, benchmark_records(bench))
    s = bench.stats()
    what = (f"{s['tasks']} tasks" if "tasks" in s else
            f"{s['units']} dialogues, {s['sessions']} sessions, {s['turns']} turns, {s['questions']} questions")
    print(f"wrote {out}: {what} from {args.source} ({lines} lines)")
    check = read_data(out)
    for problem in check.problems:  # the source's own flaws, carried over as they are
        print(f"  {problem.located(out)}")
    if check.errors:
        raise MemarchError(f"{out}: the converted file has {len(check.errors)} error(s) (listed above)")
    if check.warnings:
        print(f"  {len(check.warnings)} warning(s): the data as the source has it; the file loads")
    return 0

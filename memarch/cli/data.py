"""``memarch data``: your own data in memarch's JSONL format (docs/data.md) — ``check`` validates a
file (every problem with its line number, exit 2), ``stats`` counts it, ``convert`` writes any
benchmark's data (locomo, babi, longmemeval, ...) in the format."""
from __future__ import annotations

import json

from memarch.errors import MemarchError

HELP = "check, count or convert data in memarch's JSONL format (docs/data.md)"


def add_arguments(p) -> None:
    from memarch.cli._data_convert import add_convert_arguments

    sub = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    check = sub.add_parser("check", help="validate a data file: every problem with its line number "
                                                 "(exit 2 on errors; warnings exit 0 unless --strict)")
    check.add_argument("file", help="the .jsonl data file")
    check.add_argument("--strict", action="store_true", help="exit 2 on warnings too")
    check.set_defaults(_action=run_check)
    stats = sub.add_parser("stats", help="counts of a data file: per category, per split, sessions/turns or steps")
    stats.add_argument("file", help="the .jsonl data file")
    stats.add_argument("--seed", type=int, default=0, help="split seed for the per-split counts (default 0)")
    stats.add_argument("--json", action="store_true", help="print the counts as one JSON object")
    stats.set_defaults(_action=run_stats)
    convert = sub.add_parser("convert", help="write a benchmark's data as a memarch JSONL file")
    add_convert_arguments(convert)


def run(args) -> int:
    action = getattr(args, "_action", None)
    if action is None:
        raise MemarchError("data: name an action (check, stats, convert)")
    return int(action(args) or 0)


def run_check(args) -> int:
    from memarch.benchmarks.formats.jsonl_check import read_data

    data = read_data(args.file)
    for problem in data.problems:
        print(problem.located(args.file))
    kind = f" {data.kind}" if data.kind else ""
    n_err, n_warn = len(data.errors), len(data.warnings)
    if not data.problems:
        print(f"{args.file}: valid ({len(data.records)}{kind} records)")
        return 0
    verdict = "cannot be loaded" if n_err else "loads as --benchmark jsonl (the warnings are reported there too)"
    print(f"{args.file}: {n_err} error(s), {n_warn} warning(s) in {len(data.records)}{kind} records: {verdict}")
    return 2 if n_err or (n_warn and getattr(args, "strict", False)) else 0


def run_stats(args) -> int:
    from memarch.benchmarks import get_benchmark
    from memarch.benchmarks.base import COLLECT_DEPLOY, SPLITS

    bench = get_benchmark("jsonl", args.file, seed=args.seed)
    whole = bench.stats()
    whole.pop("split", None)
    if "units" in whole:
        whole = {"dialogues" if k == "units" else k: v for k, v in whole.items()}
    whole["splits"] = {name: _split_counts(bench.split(name)) for name in SPLITS}
    if bench.protocol == COLLECT_DEPLOY:
        whole["outcomes"] = _count(e.outcome for e in bench.recorded.values())
    else:
        whole["answerable"] = sum(1 for q in bench.questions() if q.answerable)
        whole["with_evidence"] = sum(1 for q in bench.questions() if q.evidence)
    whole["warnings"] = len(bench.problems)
    if args.json:
        print(json.dumps(whole, indent=1))
        return 0
    print(f"{args.file}:")
    for key, value in whole.items():
        if key in ("benchmark", "categories", "splits"):
            continue
        print(f"  {key}: {json.dumps(value) if isinstance(value, dict) else value}")
    print("  per category:")
    for cat, n in whole["categories"].items():
        print(f"    {cat or '(none)':<32} {n}")
    print(f"  per split (seed {args.seed}, split by {bench.split_settings()['split_by']}):")
    for name, counts in whole["splits"].items():
        print(f"    {name:<11} " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return 0


def _split_counts(view) -> dict:
    from memarch.benchmarks.base import COLLECT_DEPLOY

    if view.protocol == COLLECT_DEPLOY:
        s = view.stats()
        return {k: s[k] for k in ("tasks", "collect", "deploy", "deploy_without_relevant_memory")}
    return {"dialogues": len(view.dialogues), "questions": len(view.questions())}


def _count(values) -> dict:
    out: dict = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items()))

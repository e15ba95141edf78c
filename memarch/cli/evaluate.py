"""``memarch evaluate``: one architecture (or the no-memory baseline) on one benchmark split —
prints the scores, the per-category scores, the failure attribution, the cost and the time."""
from __future__ import annotations

import sys

from memarch.cli._objective import add_objective_argument, check_objective
from memarch.errors import MemarchError

HELP = "evaluate a memory architecture on a benchmark (generated, locomo, babi, textworld)"


def add_arguments(p) -> None:
    from memarch.benchmarks import BENCHMARKS, DEFAULT

    p.add_argument("--benchmark", default=DEFAULT, help=f"one of {', '.join(BENCHMARKS)} (default {DEFAULT})")
    p.add_argument("--architecture", default=None,
                   help="architecture JSON file; omit (or 'none') for the no-memory baseline")
    p.add_argument("--data", default=None, help="dataset path (locomo, babi; default $MEMARCH_DATA_DIR)")
    p.add_argument("--download", action="store_true", help="locomo: fetch the official file (sha256-checked) if missing")
    p.add_argument("--split", default="test", help="search, validation, test (default) or all")
    p.add_argument("--seed", type=int, default=0, help="split seed (and generation seed for generated)")
    p.add_argument("--limit", type=int, default=None, help="only the first N questions or tasks of the split")
    p.add_argument("--budget", type=int, default=200, help="context budget in words (default 200)")
    p.add_argument("--top-k", type=int, default=None, help="items per read (default: budget / 10)")
    p.add_argument("--embedder", default=None, help="'hash' for the fast test embedder (default: all-MiniLM-L6-v2)")
    p.add_argument("--judge", action="store_true", help="with an LM: also score answers with the LM judge")
    add_objective_argument(p)
    p.add_argument("--json", default=None, help="also write the full TrialResult (outcomes, attribution) here")
    try:
        from memarch.lm.arguments import add_lm_arguments
    except ImportError:  # the LM package is optional
        p.add_argument("--lm", default="none", help="task LM for the reader (requires memarch.lm)")
    else:
        add_lm_arguments(p)


def _benchmark(args):
    from memarch.benchmarks import get_benchmark

    if args.data is not None and args.benchmark in ("generated", "textworld"):
        raise MemarchError(f"--data is for locomo and babi; {args.benchmark} needs none "
                           "(did you mean --benchmark locomo or babi?)")
    knobs = {"seed": args.seed}
    if args.benchmark == "locomo" and args.download:
        knobs["download"] = True
    return get_benchmark(args.benchmark, args.data, **knobs)


def _check(args, arch, bench, lm_available: bool) -> None:
    """Reject bad options before any work: one line, exit 2 (a failed trial would exit 1)."""
    import os

    from memarch.benchmarks.base import SPLITS, TaskBenchmark
    from memarch.errors import ArchitectureError
    from memarch.pipeline.embed import DEFAULT_MODEL
    from memarch.pipeline.space import ArchitectureSpace

    if args.split not in SPLITS + ("all",):
        raise MemarchError(f"--split {args.split!r}: expected one of {', '.join(SPLITS)} or all")
    for opt in ("limit", "budget", "top_k"):
        value = getattr(args, opt)
        if value is not None and value < 1:
            raise MemarchError(f"--{opt.replace('_', '-')} must be a positive integer, not {value}")
    if args.embedder and args.embedder not in ("hash", DEFAULT_MODEL) and not os.path.isdir(args.embedder):
        raise MemarchError(f"--embedder {args.embedder!r}: expected 'hash', {DEFAULT_MODEL!r} or a local "
                           "sentence-transformers model directory")
    if args.json and os.path.isdir(args.json):
        raise MemarchError(f"--json {args.json}: is a directory (expected a file path to write)")
    check_objective(args.objective, bench, lm=lm_available, judge=args.judge)
    if arch is not None:
        default = "experience" if isinstance(bench, TaskBenchmark) else "conversation"
        family = getattr(bench, "family", default)
        space = ArchitectureSpace(family, lm_available=lm_available)
        violations = space.violations(arch)
        if violations:
            raise ArchitectureError(f"{args.architecture}: invalid for {bench.name} ({family} family): "
                                    f"{violations[0]}", rule=violations[0].rule)


def _print(result) -> None:
    from memarch.pipeline.objectives import explain_objective

    arch = result.architecture.key() if result.architecture else "no memory"
    print(f"{result.benchmark} [{result.split}] {arch}")
    if result.failed:
        print(f"  FAILED: {result.error}")
        return
    name = result.metadata.get("objective")
    what = explain_objective(name, result.metadata.get("budget_tokens"))
    print(f"  objective ({name}): {result.objective:.4f}  [{what}]")
    print("  scores: " + ", ".join(f"{k}={v:.4f}" if isinstance(v, float) and k not in ("questions", "tasks") else f"{k}={v:g}"
                                   for k, v in result.scores.items()))
    for cat, v in result.per_category.items():
        print(f"    {cat:<28} {v:.4f}")
    print("  failures attributed: " + ", ".join(f"{m}={n}" for m, n in result.attribution.items()))
    tokens = {k: v for k, v in result.cost.items() if k.startswith(("tokens_", "lm_calls"))}
    if tokens:
        print("  LM cost: " + ", ".join(f"{k}={v:g}" for k, v in sorted(tokens.items())))
    print(f"  memory items: {result.cost.get('memory_items', 0):g}; time: {result.cost['wall_s']:.2f} s "
          f"(write {result.cost.get('write_s', 0):.2f} s, read {result.cost.get('read_s', 0):.2f} s)")


def _single_threaded_faiss() -> None:
    """Per-conversation FAISS indexes are small: OpenMP threads only contend for the shared cores
    (measured under load: one LoCoMo conversation took 5.1 s with the default threads, 4.6 ms per
    search, and 1.5 s with one thread)."""
    try:
        import faiss
    except ImportError:
        return
    faiss.omp_set_num_threads(1)


def run(args) -> int:
    from memarch.pipeline.architecture import Architecture
    from memarch.pipeline.embed import Embedder
    from memarch.pipeline.evaluate import evaluate
    from memarch.pipeline.files import atomic_write_json

    _single_threaded_faiss()
    arch = None if args.architecture in (None, "none") else Architecture.load(args.architecture)
    bench = _benchmark(args)  # a missing or malformed data file stops here with one line, exit 2
    lm_spec = getattr(args, "lm", "none") or "none"
    _check(args, arch, bench, lm_available=lm_spec != "none")
    embedder = Embedder(args.embedder) if args.embedder else None
    if lm_spec == "none":
        from memarch.pipeline.resources import Resources

        result = evaluate(arch, bench, split=args.split, resources=Resources(embedder=embedder),
                          budget_tokens=args.budget, top_k=args.top_k, limit=args.limit, objective=args.objective)
    else:
        try:
            from memarch.lm.arguments import roles_from_args
        except ImportError:
            raise MemarchError(f"--lm {lm_spec}: LM support (memarch.lm) is not installed") from None
        from memarch.benchmarks.reader import AnswerJudge, MemoryReader

        with roles_from_args(args) as roles:
            resources = roles.resources(embedder=embedder)
            if hasattr(bench, "agent_lm"):  # agent tasks: the task LM plays (DSPy agent)
                bench.agent_lm = resources.lm
            result = evaluate(arch, bench, split=args.split, resources=resources, budget_tokens=args.budget,
                              top_k=args.top_k, limit=args.limit, reader=MemoryReader(resources),
                              judge=AnswerJudge(resources) if args.judge else None, objective=args.objective)
    _print(result)
    if args.json:
        atomic_write_json(args.json, result.to_dict())
        print(f"  full result written to {args.json}")
    if result.failed:
        sys.stderr.write(f"memarch: error: trial failed: {result.error}\n")
        return 1
    return 0

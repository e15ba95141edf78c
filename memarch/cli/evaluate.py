"""``memarch evaluate``: one architecture (or the no-memory baseline, or a saved program) on one
benchmark split — prints the scores, the per-category scores, the failure attribution, the LM
fallbacks, the cost and the time; for a saved program, whether its reported score reproduces."""
from __future__ import annotations

import sys

from memarch.cli._knobs import add_knob_argument, parse_knobs
from memarch.cli._memory_budget import add_memory_budget_argument, resolve_memory_budget
from memarch.cli._metric import add_metric_argument, check_metric
from memarch.cli._official_report import print_categories, print_official
from memarch.errors import MemarchError
from memarch.pipeline.retrieval import DEFAULT_CONTEXT_BUDGET

HELP = "evaluate a memory architecture on a benchmark (generated, locomo, babi, longmemeval, textworld, jsonl)"


def add_arguments(p) -> None:
    from memarch.benchmarks import BENCHMARKS, DEFAULT
    from memarch.pipeline.embed import EMBEDDER_HELP

    p.add_argument("--benchmark", default=None, help=f"one of {', '.join(BENCHMARKS)} (default {DEFAULT}, "
                   "or the one a --program was scored on)")
    p.add_argument("--architecture", default=None,
                   help="architecture JSON file; omit (or 'none') for the no-memory baseline")
    p.add_argument("--program", default=None,
                   help="a saved program (memarch compile): its architecture, top_k and context budget, and "
                        "the benchmark, data, split and metric it was scored with unless given here")
    p.add_argument("--data", default=None, help="dataset path (locomo, babi, longmemeval; default "
                   "$MEMARCH_DATA_DIR; jsonl: your .jsonl file, docs/data.md)")
    p.add_argument("--download", action="store_true", help="locomo: fetch the official file (sha256-checked) if missing")
    p.add_argument("--split", default="test", help="search, validation, test (default) or all")
    p.add_argument("--seed", type=int, default=None,
                   help="split seed (and generation seed for generated; default 0)")
    p.add_argument("--limit", type=int, default=None, help="only the first N questions or tasks of the split")
    add_knob_argument(p)
    p.add_argument("--context-budget", type=int, default=None, metavar="WORDS",
                   help=f"context budget in words (default {DEFAULT_CONTEXT_BUDGET})")
    p.add_argument("--top-k", type=int, default=None, help="items per read (default: context budget / 10)")
    p.add_argument("--embedder", default=None, help=EMBEDDER_HELP)
    p.add_argument("--judge", action="store_true", help="with an LM: also score answers with the LM judge")
    add_metric_argument(p)
    add_memory_budget_argument(p)
    p.add_argument("--json", default=None, help="also write the full TrialResult (outcomes, attribution) here")
    try:
        from memarch.lm.arguments import add_lm_arguments
    except ImportError:  # the LM package is optional
        p.add_argument("--lm", default="none", help="task LM for the reader (requires memarch.lm)")
    else:
        add_lm_arguments(p)


def _saved(args):
    """The --program file with its settings applied to ``args``, or None (plain defaults applied)."""
    from memarch.benchmarks import DEFAULT

    if args.program is None:
        args.benchmark = args.benchmark or DEFAULT
        args.context_budget = DEFAULT_CONTEXT_BUDGET if args.context_budget is None else args.context_budget
        args.seed = 0 if args.seed is None else args.seed
        return None
    if args.architecture is not None:
        raise MemarchError("--program and --architecture are exclusive: the program file names its architecture")
    from memarch.cli._saved_program import SavedProgram

    saved = SavedProgram.read(args.program)
    saved.apply(args)
    return saved


def _benchmark(args):
    from memarch.benchmarks import get_benchmark

    if args.data is not None and args.benchmark in ("generated", "textworld"):
        raise MemarchError(f"--data is for locomo and babi; {args.benchmark} needs none "
                           "(did you mean --benchmark locomo or babi?)")
    knobs = {"seed": 0 if args.seed is None else args.seed}
    if args.benchmark == "locomo" and args.download:
        knobs["download"] = True
    return get_benchmark(args.benchmark, args.data, **{**knobs, **parse_knobs(args.knob)})


def _check(args, arch, bench, lm_available: bool) -> None:
    """Reject bad options before any work: one line, exit 2 (a failed trial would exit 1)."""
    import os

    from memarch.benchmarks.base import SPLITS
    from memarch.errors import ArchitectureError
    from memarch.pipeline.embed import check_embedder
    from memarch.pipeline.space import ArchitectureSpace

    if args.split not in SPLITS + ("all",):
        raise MemarchError(f"--split {args.split!r}: expected one of {', '.join(SPLITS)} or all")
    for opt in ("limit", "context_budget", "top_k"):
        value = getattr(args, opt)
        if value is not None and value < 1:
            raise MemarchError(f"--{opt.replace('_', '-')} must be a positive integer, not {value}")
    if args.embedder:
        check_embedder(args.embedder)
    if args.json and os.path.isdir(args.json):
        raise MemarchError(f"--json {args.json}: is a directory (expected a file path to write)")
    check_metric(args.metric, bench, lm=lm_available, judge=args.judge)
    if arch is not None:
        family = bench.family
        space = ArchitectureSpace(family, lm_available=lm_available)
        violations = space.violations(arch)
        if violations:
            raise ArchitectureError(f"{args.architecture}: invalid for {bench.name} ({family} family): "
                                    f"{violations[0]}", rule=violations[0].rule)


def _print(result) -> None:
    from memarch.benchmarks.metrics.registry import explain_metric

    arch = result.architecture.key() if result.architecture else "no memory"
    knobs = result.metadata.get("knobs") or {}
    shown = f" ({', '.join(f'{k}={v}' for k, v in knobs.items())})" if knobs else ""
    print(f"{result.benchmark}{shown} [{result.split}] {arch}")
    if result.failed:
        print(f"  FAILED: {result.error}")
        return
    name = result.metadata.get("metric")
    what = explain_metric(name, result.metadata.get("context_budget"))
    print(f"  score ({name}): {result.score:.4f}  [{what}]")
    from memarch.benchmarks.metrics.retrieval import RANKING_METRICS, RETRIEVAL_METRICS, SESSION_METRICS

    counts = ("questions", "tasks", "retrieval_skipped", "metric_fallbacks")
    print("  scores: " + ", ".join(f"{k}={v:.4f}" if isinstance(v, float) and k not in counts else f"{k}={v:g}"
                                   for k, v in result.scores.items() if k not in RANKING_METRICS))
    report = result.metadata.get("category_report")
    if report is not None:  # a benchmark with an official report: its scripts' table
        print_categories(report)
    else:
        for cat, v in result.per_category.items():
            print(f"    {cat:<28} {v:.4f}")
    _print_retrieval(result, RETRIEVAL_METRICS, "turn")
    _print_retrieval(result, SESSION_METRICS, "session")
    if "official" in result.metadata:
        print_official(result.metadata["official"], result.metadata.get("top_k"), result.metadata.get("context_budget"))
    print("  failures attributed: " + ", ".join(f"{m}={n}" for m, n in result.attribution.items()))
    lm_cost = {k: v for k, v in result.cost.items() if k.startswith(("tokens_", "lm_calls"))}
    if lm_cost:
        print("  LM cost: " + ", ".join(f"{k}={v:g}" for k, v in sorted(lm_cost.items())))
    _print_fallbacks(result)
    kept = result.metadata.get("memory_budget")
    if kept:
        print(f"  memory budget {kept['words']} words per namespace: " + ", ".join(
            f"{k} {v}" for k, v in kept.items() if k not in ("words", "passes")) + f" (over {kept['passes']} writes)")
    c = result.cost
    if "stuck_moves" in c:
        notes = (f"; notes: {c['memory_actions_per_step']:g} memory actions per step, writes {c['writes']:g} "
                 f"(duplicate {c['duplicate_writes']:g}), searches {c['searches']:g} (empty {c['empty_searches']:g})"
                 if "memory_actions_per_step" in c else "")
        print(f"  agent: stuck moves {c['stuck_moves']:g}, back-and-forth moves {c['back_and_forth_moves']:g}{notes}")
    if "embed_ahead_s" in c:
        print(f"  embedded ahead: {c['embed_ahead_computed']:g} texts in {c['embed_ahead_s']:.1f} s on other processes"
              + (f"; {c['embed_ahead_missing']:g} left to the run (a worker failed)" if c['embed_ahead_missing'] else ""))
    print(f"  memory items: {c.get('memory_items', 0):g}, words: {c.get('memory_words', 0):g} (largest namespace "
          f"{c.get('memory_words_max_ns', 0):g}); time: {c['wall_s']:.2f} s (write {c.get('write_s', 0):.2f} s, "
          f"read {c.get('read_s', 0):.2f} s; per read p50 {c.get('read_p50_ms', 0):.1f} ms, "
          f"p95 {c.get('read_p95_ms', 0):.1f} ms)")


def _embed_progress():
    """A progress line on stderr about every minute while texts are embedded ahead of the run, its
    ETA at the workers' pace so far."""
    import time

    last = [float("-inf")]

    def report(progress) -> None:
        now = time.monotonic()
        if now - last[0] >= 60 and progress.eta_s is not None:
            last[0] = now
            sys.stderr.write(f"memarch: embedding ahead: {progress.done:,} / {progress.total:,} texts, "
                             f"~{progress.eta_s / 60:.0f} min left\n")

    return report


def _print_retrieval(result, metrics, unit: str) -> None:
    """The turn- or session-level retrieval metrics (trec_eval, over the gold evidence ids or their
    sessions), overall and per category, for a conversation benchmark."""
    shown = [m for m in metrics if m in result.scores]
    if not shown:
        return
    what = "evidence ids" if unit == "turn" else "the evidence's sessions, a session at its best item"
    print(f"  retrieval ({unit} level over {what}, trec_eval; {result.scores.get('retrieval_skipped', 0):g} "
          "questions without evidence skipped):")
    width = max(9, *(len(m) for m in shown))
    print(f"    {'':<28} " + " ".join(f"{m:>{width}}" for m in shown))
    print(f"    {'all':<28} " + " ".join(f"{result.scores[m]:>{width}.4f}" for m in shown))
    for cat, values in result.metadata.get("retrieval_per_category", {}).items():
        print(f"    {cat:<28} " + " ".join(f"{values[m]:>{width}.4f}" if m in values else f"{'-':>{width}}"
                                           for m in shown))


def _print_fallbacks(result) -> None:
    """Per module, the LM answers that fell back to the LM-free rule: a run whose LM paths all fell
    back must never read as an LM run."""
    from memarch.benchmarks.evaluation.fallbacks import all_fell_back, describe

    if not result.lm_requests:
        return
    calls = result.cost.get("lm_calls")
    print("  LM fallbacks: " + describe(result.lm_requests, result.fallbacks)
          + (f" (LM calls: {calls:g})" if calls is not None else ""))
    if all_fell_back(result.lm_requests, result.fallbacks):
        print(f"  WARNING: every LM answer ({sum(result.lm_requests.values())}) fell back to the LM-free "
              "path: these are not an LM run's scores")


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
    from memarch.benchmarks.evaluation.evaluate import evaluate
    from memarch.benchmarks.evaluation.settings import EvaluationSettings
    from memarch.pipeline.files import atomic_write_json

    _single_threaded_faiss()
    saved = _saved(args)
    arch = saved.architecture if saved else (
        None if args.architecture in (None, "none") else Architecture.load(args.architecture))
    # a missing or malformed data file stops here with one line, exit 2
    bench = saved.benchmark(args) if saved else None
    bench = _benchmark(args) if bench is None else bench
    lm_spec = getattr(args, "lm", "none") or "none"
    _check(args, arch, bench, lm_available=lm_spec != "none")
    memory_budget = resolve_memory_budget(args, bench)
    config = memory_budget.config() if memory_budget else None
    if saved and memory_budget:
        saved.set_memory_budget(memory_budget.words)
    metric = getattr(args, "metric", None) or (saved.record.metric if saved and saved.record else None)
    if lm_spec == "none" and metric in ("qa_f1", "judge"):
        scored = f" ({args.program} was scored with one)" if saved else ""
        raise MemarchError(f"metric {metric} scores an LM reader's answers; pass --lm{scored}")
    settings = EvaluationSettings(context_budget=args.context_budget, top_k=args.top_k, metric=metric, config=config)
    embedder = Embedder(args.embedder) if args.embedder else None
    if lm_spec == "none":
        from memarch.pipeline.resources import Resources

        resources = Resources(embedder=embedder)
        result = evaluate(saved.build(resources) if saved else arch, bench, split=args.split, resources=resources,
                          settings=settings, limit=args.limit, on_embed_progress=_embed_progress())
    else:
        try:
            from memarch.lm.arguments import roles_from_args
        except ImportError:
            raise MemarchError(f"--lm {lm_spec}: LM support (memarch.lm) is not installed") from None
        from memarch.benchmarks.evaluation.reader import AnswerJudge, MemoryReader

        with roles_from_args(args) as roles:
            resources = roles.resources(embedder=embedder)
            if bench.uses_agent_lm:  # agent tasks: the task LM plays (DSPy agent)
                bench.agent_lm = resources.lm
            program = saved.build(resources) if saved else None
            reader = MemoryReader(resources)
            if program is not None and program.reader_prompts and "answer" in program.reader_prompts:
                from memarch.pipeline.prompt_state import apply_prompt

                apply_prompt(reader.answer, program.reader_prompts["answer"])  # the prompt it was scored with
            judge = AnswerJudge(resources) if args.judge or metric == "judge" else None
            result = evaluate(program or arch, bench, split=args.split, resources=resources, limit=args.limit,
                              settings=settings.replace(reader=reader, metric=metric or "qa_f1", judge=judge),
                              on_embed_progress=_embed_progress())
    _print(result)
    if memory_budget:
        print(f"  {memory_budget.describe()}")
    if saved:
        print("\n".join(saved.describe()))
        line = saved.comparison(result)
        if line:
            print(line)
    if args.json:
        atomic_write_json(args.json, result.to_dict())
        print(f"  full result written to {args.json}")
    if result.failed:
        sys.stderr.write(f"memarch: error: trial failed: {result.error}\n")
        return 1
    return 0

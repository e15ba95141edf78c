"""``memarch compile``: search a benchmark's architecture space, pick on validation, report on test,
save the program as JSON; every trial in an Optuna study (resumable) and in MLflow."""
from __future__ import annotations

import logging
from pathlib import Path

from memarch.cli._search_arguments import add_search_arguments
from memarch.errors import MemarchError

HELP = "search the best memory architecture for a benchmark and save it as a program (JSON)"


def space_line(space, mode: str) -> str:
    """What the search explores, printed by compile and compare."""
    from memarch.optimizers.search.param_space import ParamSpace

    knobs = len(ParamSpace(space, mode).knob_table())
    extra = f" + {knobs} numeric knobs, conditional on their module" if mode == "full" else ""
    extra += f"; left out: {', '.join(space.exclude)}" if space.exclude else ""
    return f"search space: {mode} ({space.family}, {space.count_valid()} valid module choices{extra})"


def parse_strategies(text: str | None, default: list[str]) -> list[str]:
    from memarch.optimizers.samplers.strategies import STRATEGIES, UNSUPPORTED, check_strategy

    names = [s.strip() for s in text.split(",") if s.strip()] if text else default
    bad = [n for n in names if n not in STRATEGIES]
    if len(bad) == 1 and bad[0] in UNSUPPORTED:
        check_strategy(bad[0])  # one line naming why that Optuna sampler does not fit
    if bad or not names:
        raise MemarchError(f"unknown strategy {', '.join(bad) or '(none)'}; expected some of {', '.join(STRATEGIES)}")
    return names


def check_numbers(args) -> None:
    from memarch.optimizers.search.selection import parse_selection
    from memarch.optimizers.search.study import check_storage_url
    from memarch.optimizers.search.objectives import parse_objectives

    check_storage_url(storage_url(args))
    args.objectives = parse_objectives(getattr(args, "objectives", None))
    parse_selection(getattr(args, "select", None), args.objectives)
    if args.budget < 1:
        raise MemarchError(f"--budget must be at least 1, got {args.budget}")
    if args.finalists < 1:
        raise MemarchError(f"--finalists must be at least 1, got {args.finalists}")
    if args.seeds is not None and args.seeds < 1:
        raise MemarchError(f"--seeds must be at least 1, got {args.seeds}")
    if args.first_seed < 0:
        raise MemarchError(f"--first-seed must be 0 or more, got {args.first_seed}")
    if args.k < 1:
        raise MemarchError(f"--k must be at least 1, got {args.k}")
    if args.context_budget < 1:
        raise MemarchError(f"--context-budget must be at least 1 word, got {args.context_budget}")
    if args.strategies is not None and not [s for s in args.strategies.split(",") if s.strip()]:
        raise MemarchError("--strategies names no strategy; expected e.g. guided,random,tpe")
    if args.data and args.benchmark in ("generated", "textworld"):
        raise MemarchError(f"--data does not apply to the {args.benchmark} benchmark (it needs no dataset)")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise MemarchError(f"--out {out}: exists and is not a directory")
    output = getattr(args, "output", None)
    if output and Path(output).is_dir():
        raise MemarchError(f"--output {output}: is a directory; expected a file path for the program JSON")
    if args.limit is not None and args.limit < 1:
        raise MemarchError(f"--limit must be at least 1, got {args.limit}")
    if args.max_failures < 0:
        raise MemarchError(f"--max-failures must be 0 or more, got {args.max_failures}")
    from memarch.optimizers.pruners import check_pruner

    args.pruner = check_pruner(getattr(args, "pruner", "none"))
    if args.pruner != "none" and len(args.objectives) > 1:
        raise MemarchError(f"--pruner {args.pruner} needs one objective (Optuna prunes single-objective studies only)")
    if getattr(args, "trace_lm", None) is True and (args.no_tracking or (getattr(args, "lm", "none") or "none") == "none"):
        raise MemarchError("--trace-lm traces LM calls into MLflow: it needs --lm and tracking (no --no-tracking)")


def build_evaluator(args, resources):
    """The cached `BenchmarkEvaluator` of the parsed options: the benchmark (its knobs, split unit and
    data), and the settings every trial reads and scores with (context budget, metric, reader,
    judge, memory budget)."""
    from memarch.benchmarks import get_benchmark
    from memarch.benchmarks.evaluation.settings import EvaluationSettings
    from memarch.cli._knobs import parse_knobs
    from memarch.cli._memory_budget import resolve_memory_budget
    from memarch.cli._metric import check_metric
    from memarch.optimizers.evaluators import BenchmarkEvaluator, CachedEvaluator

    knobs = parse_knobs(args.knob)
    if getattr(args, "split_by", None):
        knobs["split_by"] = args.split_by
    bench = get_benchmark(args.benchmark, args.data, **knobs)
    settings = EvaluationSettings(context_budget=args.context_budget)
    if resources.lm is not None:
        # With a task LM the metric is the reader's QA F1 (and a judge when --judge-lm is given);
        # on agent tasks the task LM plays the game through the DSPy agent.
        from memarch.benchmarks.evaluation.reader import AnswerJudge, MemoryReader

        settings = settings.replace(reader=MemoryReader(resources), metric="qa_f1",
                                    judge=AnswerJudge(resources) if getattr(args, "judge_lm", None) else None)
        if bench.uses_agent_lm:
            bench.agent_lm = resources.lm
    metric = check_metric(getattr(args, "metric", None), bench, lm=resources.lm is not None)
    if metric:
        settings = settings.replace(metric=metric)
        if metric == "judge" and settings.judge is None:
            from memarch.benchmarks.evaluation.reader import AnswerJudge

            settings = settings.replace(judge=AnswerJudge(resources))
    memory_budget = resolve_memory_budget(args, bench)
    if memory_budget is not None:  # every trial's program (and the compiled one) keeps it
        settings = settings.replace(config=memory_budget.config())
    return CachedEvaluator(BenchmarkEvaluator(bench, resources=resources, limit=args.limit, knobs=knobs,
                                              settings=settings, memory_budget=memory_budget))


def storage_url(args) -> str | None:
    return None if args.storage in ("memory", "none", "") else args.storage


def lm_roles(args):
    spec = getattr(args, "lm", "none") or "none"
    if spec == "none" and not getattr(args, "meta_lm", None):
        return None
    from memarch.lm.arguments import roles_from_args

    return roles_from_args(args)


def tracker_for(args):
    """An MLflow tracker for ``--tracking-uri`` (artifacts beside a sqlite store), or None."""
    if args.no_tracking:
        return None
    from memarch.optimizers.tracking.tracker import DEFAULT_ARTIFACTS, Tracker

    uri = args.tracking_uri
    root = Path(uri[len("sqlite:///"):]).parent / "artifacts" if uri.startswith("sqlite:///") else DEFAULT_ARTIFACTS
    return Tracker(uri, artifact_root=root, trace_lm=trace_lm_wanted(args))


def trace_lm_wanted(args) -> bool:
    """``--trace-lm`` / ``--no-trace-lm`` when given, else whether an LM is in play."""
    trace = getattr(args, "trace_lm", None)
    return (getattr(args, "lm", None) or "none") != "none" if trace is None else bool(trace)


def add_arguments(p) -> None:
    add_search_arguments(p)
    p.add_argument("--preset", default=None, help="start from a human-designed preset (see `memarch presets`)")
    p.add_argument("--output", default=None, help="program JSON path (default OUT/<study>.program.json)")
    p.add_argument("--optimize-prompts", default="none", metavar="NAME",
                   help="stage two once the architecture is chosen: none (default), bootstrap, mipro or gepa — "
                        "DSPy's optimizer over the program's LM prompts and the reader's (needs --lm)")
    p.add_argument("--prompt-examples", type=int, default=20,
                   help="questions per split inside the prompt optimizer (default 20)")
    p.add_argument("--prompt-budget", type=int, default=60,
                   help="prompt optimizer budget: GEPA metric calls, MIPRO trials x examples (default 60)")
    p.add_argument("--register", default=None, metavar="NAME",
                   help="register the compiled program (an MLflow pyfunc model logged with the run) in the "
                        "MLflow model registry as NAME (a new version each time)")


def run(args) -> int:
    check_numbers(args)
    from memarch.optimizers.search.settings import check_prompt_optimizer

    check_prompt_optimizer(args.optimize_prompts)
    if args.prompt_examples < 1 or args.prompt_budget < 1:
        raise MemarchError(f"--prompt-examples and --prompt-budget must be at least 1, got "
                           f"{args.prompt_examples} and {args.prompt_budget}")
    if args.register is not None and (args.no_tracking or not args.register.strip()):
        raise MemarchError("--register needs MLflow tracking (drop --no-tracking) and a model name")
    strategies = parse_strategies(args.strategies, ["guided"])
    roles = lm_roles(args)
    if roles is None:
        return _compile(args, strategies, None)
    with roles:
        return _compile(args, strategies, roles)


def _compile(args, strategies: list[str], roles) -> int:
    import optuna

    from memarch.pipeline.presets import get_preset

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    lm = roles.task if roles else None
    print(objectives_line(args.objectives))
    resources = build_resources(args, roles)
    evaluator = build_evaluator(args, resources)
    space = evaluator_space(evaluator, lm, args.exclude)
    student = get_preset(args.preset, space) if args.preset else space
    print_plan(args, evaluator, space)
    if args.optimize_prompts != "none":
        _prompt_line(args, evaluator, lm)
    seeds = range(args.first_seed, args.first_seed + (args.seeds or 1))
    runs = [_compile_one(args, evaluator, space, student, resources, roles, strategy, seed,
                         several=len(strategies) * len(seeds) > 1)
            for strategy in strategies for seed in seeds]
    rep, program = max(runs, key=lambda run: _pick_key(run[0]))  # the first of the best, as before
    _save_pick(args, evaluator, rep, program)
    return 0


def objectives_line(objectives: tuple[str, ...]) -> str:
    return ("objectives: " + ", ".join(f"{n} ({'max' if n == 'quality' else 'min'})" for n in objectives)
            + (" (one objective: ties broken by lower memory_words, then read_p95)" if len(objectives) == 1 else ""))


def build_resources(args, roles):
    """The embedder and LMs every trial shares (`--embedder`, `--lm` ...)."""
    from memarch.pipeline.embed import Embedder, check_embedder
    from memarch.pipeline.resources import Resources

    embedder = Embedder(check_embedder(args.embedder)) if args.embedder else None
    return roles.resources(embedder=embedder) if roles else Resources(embedder=embedder)


def evaluator_space(evaluator, lm, exclude: str = ""):
    """The architecture space the evaluator's benchmark is searched in, less ``--exclude``
    (compile() searches the same)."""
    return evaluator.architecture_space(lm_available=lm is not None, exclude=exclude)


def print_plan(args, evaluator, space) -> None:
    """What will be searched: the metric, the space, the memory budget."""
    from memarch.cli._metric import metric_line

    print(metric_line(evaluator))
    print(space_line(space, args.space))
    if evaluator.memory_budget is not None:
        print(evaluator.memory_budget.describe())


def search_settings(args, strategy: str, seed: int, study_name: str | None):
    """The `SearchSettings` of one run from the parsed options (compile's, and compare's template)."""
    from memarch.optimizers.compile import SearchSettings

    return SearchSettings(
        strategy=strategy, budget=args.budget, finalists=args.finalists, seed=seed, k=args.k,
        storage=storage_url(args), study_name=study_name,
        resume=args.resume, warm_start=args.warm_start, max_failures=args.max_failures, objectives=args.objectives,
        select=args.select, space_mode=args.space, pruner=args.pruner,
        prompt_optimizer=getattr(args, "optimize_prompts", "none"), prompt_examples=getattr(args, "prompt_examples", 20),
        prompt_budget=getattr(args, "prompt_budget", 60), prefetch=getattr(args, "prefetch", True),
        exclude=getattr(args, "exclude", ""))


def _study_name(args, space, strategy: str, seed: int, several: bool) -> str:
    if args.study_name and several:
        return f"{args.study_name}-{strategy}-s{seed}"
    return args.study_name or f"{args.benchmark}-{space.family}-{strategy}-s{seed}"


def _compile_one(args, evaluator, space, student, resources, roles, strategy: str, seed: int, *, several: bool):
    """One strategy and seed: its compile, and the line that reports it; (report, program)."""
    from memarch.cli._progress import Progress
    from memarch.optimizers.compile import MemarchOptimizer

    name = _study_name(args, space, strategy, seed, several)
    bar = Progress(args.budget, f"{strategy} seed {seed}")
    opt = MemarchOptimizer(evaluator, search_settings(args, strategy, seed, name), lm=roles.task if roles else None,
                           meta_lm=roles.meta if roles else None, tracker=tracker_for(args), resources=resources,
                           on_trial=bar)
    try:
        program = opt.compile(student, trainset="search", valset="validation", testset="test")
    finally:
        bar.close()
    rep = opt.report
    print(f"{strategy} seed {seed}: {rep.architecture.key()}  search {rep.search_score:.4f}  "
          f"validation {rep.validation_score:.4f}  test {test_text(rep)}  [metric {rep.metric}] "
          f"({rep.trials} distinct architectures; {rep.counts_line()})")
    if rep.test_error:  # None and counted (test_failed), never a 0.0 score
        print(f"  test evaluation failed: {rep.test_error}")
    for line in front_lines(rep):
        print(line)
    if rep.prompts:
        print("  " + rep.prompts["summary"])
    return rep, program


def _save_pick(args, evaluator, rep, program) -> None:
    """The best run's program saved (as compile() built it: the top_k, context budget and
    evaluation record of its trials), and where to look next."""
    from memarch.optimizers.tracking.tracker import ui_command

    path = Path(args.output) if args.output else Path(args.out) / f"{rep.study}.program.json"
    program.save(path, include_memory=False)
    print(f"compiled: {rep.architecture.key()} (chosen on validation {rep.validation_score:.4f}; "
          f"test {test_text(rep)}); selection: {rep.selection}")
    budget = evaluator.memory_budget
    print(f"program saved to {path} (top_k {program.top_k}, context budget {program.context_budget} words, "
          + (f"memory budget {budget.words} words per namespace, " if budget else "")
          + f"as its trials read; `memarch evaluate --program {path}` re-scores it)")
    if not args.no_tracking:
        _print_model(args, rep)
        print(f"MLflow: memarch ui --tracking-uri {args.tracking_uri}  (opens on the study's runs; "
              f"plain `{ui_command(args.tracking_uri)}` lands on the GenAI overview)")
    logging.getLogger(__name__).info("study %s", rep.study)


def _prompt_line(args, evaluator, lm) -> None:
    """Stage two's plan, before the search spends anything: refused on agent benchmarks, a smoke
    run with the embedded model."""
    from memarch.optimizers.prompts.optimize import check_benchmark

    if lm is None:
        return  # the LM-free program has nothing to optimise; said after the search, and counted
    check_benchmark(evaluator.benchmark)
    smoke = " (--lm local: a smoke run of the machinery, never a quality claim)" if args.lm == "local" else ""
    budget = "one pass, no budget" if args.optimize_prompts == "bootstrap" else f"budget {args.prompt_budget}"
    print(f"prompt optimisation after the search: {args.optimize_prompts}, {args.prompt_examples} questions per "
          f"split, {budget}{smoke}")


def _print_model(args, rep) -> None:
    """Where the chosen program's MLflow model is (and its registered version with --register)."""
    uri = rep.extras.get("model_uri")
    if uri is None:
        print(f"MLflow model: not logged ({rep.extras.get('model_error', 'no model')})")
        return
    line = (f"MLflow model: {uri} (mlflow.pyfunc.load_model(uri).predict([{{'query': ...}}]); "
            "docs/search.md, \"The compiled program as an MLflow model\")")
    if args.register:
        from memarch.optimizers.tracking.program_model import register_program_model

        line += f"; registered as {register_program_model(uri, args.register, tracking_uri=args.tracking_uri)}"
    print(line)


def test_text(rep) -> str:
    """The pick's test score, or why there is none (a failed evaluation is never shown as 0.0)."""
    if rep.test_score is not None:
        return f"{rep.test_score:.4f}"
    return "FAILED" if getattr(rep, "test_error", None) else "not run"


def front_lines(rep) -> list[str]:
    """The search Pareto front and the pick's validation values of a multi-objective run."""
    from memarch.optimizers.search.objectives import describe

    if len(rep.objectives) < 2:
        return []
    lines = [f"  search Pareto front ({len(rep.front)} of {rep.trials}; {', '.join(rep.objectives)}):"]
    lines += [f"    {describe(rep.objectives, v)}  {k}" for k, v in rep.search_front()]
    picked = rep.validation.get("validation_values", {}).get(rep.architecture.key())
    if picked:
        lines.append(f"  pick on validation ({rep.selection}): "
                     f"{describe(rep.objectives, [picked[n] for n in rep.objectives])}  {rep.architecture.key()}")
    return lines


def _pick_key(rep) -> tuple:
    """Across runs: the better validation quality of the picks; ties to lower memory_words, then read_p95."""
    v = rep.validation.get("validation_values", {}).get(rep.architecture.key(), {})
    return (rep.validation_score, -v.get("memory_words", 0.0), -v.get("read_p95", 0.0))

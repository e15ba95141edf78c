"""``memarch compare``: strategies side by side at equal trial budgets over several seeds, with the
human-designed presets and the no-memory agent on the same test split; prints the table, writes
the PNG of best-so-far curves."""
from __future__ import annotations

import json

from memarch.errors import MemarchError

HELP = "compare search strategies (guided, random, tpe, nsga2, gp, qmc, ...) at equal budgets over seeds: table + PNG"


def add_arguments(p) -> None:
    from memarch.cli._search_arguments import add_search_arguments

    add_search_arguments(p)
    p.add_argument("--target", type=float, default=None,
                   help="search score to reach (default: 99%% of the best any run found)")
    p.add_argument("--no-baselines", action="store_true", help="skip the presets and the no-memory baseline")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="run N (strategy, seed) studies side by side in forked processes, one per core (LM-free "
                        "runs only; each run's result is the one it gets alone; default 1)")
    p.add_argument("--landscape", default=None, metavar="FILE",
                   help="a landscape .npz of the same benchmark: also score every run against it (trials to a "
                        "top-1%% architecture, captured gain, rank; CIs over seeds)")


def run(args) -> int:
    from memarch.cli.compile import check_numbers, lm_roles, parse_strategies

    check_numbers(args)
    if args.workers < 1:
        raise MemarchError(f"--workers must be at least 1, got {args.workers}")
    if args.workers > 1 and ((getattr(args, "lm", "none") or "none") != "none" or getattr(args, "meta_lm", None)):
        raise MemarchError("--workers > 1 runs LM-free studies side by side; with --lm, use --workers 1")
    strategies = parse_strategies(args.strategies, ["guided", "random", "tpe"])
    roles = lm_roles(args)
    if roles is None:
        return compare_main(args, strategies, None)
    with roles:
        return compare_main(args, strategies, roles)


def compare_main(args, strategies: list[str], roles) -> int:
    import optuna

    from memarch.cli._metric import metric_line
    from memarch.cli.compile import build_evaluator, build_resources, evaluator_space, space_line
    from memarch.pipeline.files import writable_dir

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    evaluator = build_evaluator(args, build_resources(args, roles))
    space = evaluator_space(evaluator, roles.task if roles else None, args.exclude)
    landscape = _landscape(args, evaluator)  # a bad file fails here, before any trial runs
    out = writable_dir(args.out)  # before the runs: an hour of trials is not lost to a bad --out
    cmp = _run(args, evaluator, space, strategies, roles)
    png = cmp.plot(out / f"compare-{args.benchmark}.png")
    fronts_png = cmp.plot_fronts(out / f"compare-{args.benchmark}-fronts.png")
    budget = f"{evaluator.memory_budget.describe()}\n" if evaluator.memory_budget is not None else ""
    table = metric_line(evaluator) + "\n" + space_line(space, args.space) + "\n" + budget + cmp.table()
    from memarch.optimizers.landscapes.protocol import paired_test_lines

    paired = paired_test_lines({s: {int(r.seed or 0): r.test_score for r in reps if r.test_score is not None}
                                for s, reps in cmp.runs.items()})
    table += "".join("\n" + line for line in paired)
    oracle = regret_png = None
    if landscape is not None:
        from memarch.optimizers.landscapes.compare_oracle import OracleView, check_landscape

        check_landscape(landscape, args.benchmark, evaluator.family, cmp.metric)
        oracle = OracleView(landscape, cmp.runs, budget=args.budget, metric=cmp.metric)
        table += "\n" + "\n".join(oracle.lines())
        protocol = oracle.protocol()
        if protocol.report.runs:
            table += "\n" + protocol.table()
            regret_png = protocol.plot(out / f"compare-{args.benchmark}-regret.png")
    (out / f"compare-{args.benchmark}.txt").write_text(table + "\n")
    _write_json(out / f"compare-{args.benchmark}.json", args, cmp, evaluator, oracle)
    print(table)
    print(f"curves: {png}")
    if regret_png is not None:
        print(f"regret against budget: {regret_png}")
    if fronts_png is not None:
        print(f"Pareto fronts: {fronts_png}")
    if not args.no_tracking:
        from memarch.optimizers.tracking.tracker import ui_command

        print(f"MLflow: memarch ui --tracking-uri {args.tracking_uri}  (opens on the study's runs; "
              f"plain `{ui_command(args.tracking_uri)}` lands on the GenAI overview)")
    return 0


def _landscape(args, evaluator):
    """The ``--landscape`` file, checked against the benchmark and metric (None when not given)."""
    if not args.landscape:
        return None
    from memarch.optimizers.landscapes.compare_oracle import check_landscape
    from memarch.optimizers.landscapes.table import Landscape

    landscape = Landscape.load(args.landscape)
    check_landscape(landscape, args.benchmark, evaluator.family,
                    evaluator.settings.metric or landscape.default_metric)
    return landscape


def _run(args, evaluator, space, strategies: list[str], roles):
    """Every strategy over the seeds, with a progress bar over all their trials."""
    from memarch.cli._progress import Progress
    from memarch.cli.compile import search_settings, tracker_for
    from memarch.optimizers.comparison import CompareSettings, compare

    comparison = CompareSettings(seeds=args.seeds or 3, first_seed=args.first_seed, target=args.target,
                                 baselines=not args.no_baselines, workers=args.workers,
                                 study_prefix=args.study_name or f"compare-{args.benchmark}")
    bar = Progress(args.budget * comparison.seeds * len(strategies), "compare")
    try:
        return compare(evaluator, space, strategies, search_settings(args, "guided", 0, None), comparison,
                       lm=roles.task if roles else None, meta_lm=roles.meta if roles else None,
                       tracker_factory=(lambda: tracker_for(args)) if not args.no_tracking else None, on_trial=bar)
    finally:
        bar.close()


def _write_json(path, args, cmp, evaluator, oracle) -> None:
    fronts = cmp.fronts()
    path.write_text(json.dumps(
        {"rows": cmp.rows(), "baselines": cmp.baselines, "target": cmp.target,
         "winner": cmp.winner(), "metric": cmp.metric, "space": args.space, "failed_baselines": cmp.failed_baselines,
         "runs": {s: [r.to_dict() for r in reps] for s, reps in cmp.runs.items()},
         "evaluations": cmp.evaluations,
         "fronts": fronts.to_dict() if fronts is not None else None,
         "landscape": oracle.to_dict() if oracle is not None else None}, indent=1, default=str))

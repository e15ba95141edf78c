"""``memarch compare``: strategies side by side at equal trial budgets over several seeds, with the
human-designed presets and the no-memory agent on the same test split; prints the table, writes
the PNG of best-so-far curves."""
from __future__ import annotations

import json

HELP = "compare search strategies (guided, random, tpe, nsga2, gp, qmc, ...) at equal budgets over seeds: table + PNG"


def add_arguments(p) -> None:
    from memarch.cli.compile import add_search_arguments

    add_search_arguments(p, default_budget=12)
    p.add_argument("--target", type=float, default=None,
                   help="search objective to reach (default: 99%% of the best any run found)")
    p.add_argument("--no-baselines", action="store_true", help="skip the presets and the no-memory baseline")
    p.add_argument("--landscape", default=None, metavar="FILE",
                   help="a landscape .npz of the same benchmark: also score every run against it (trials to a "
                        "top-1%% architecture, captured gain, rank; CIs over seeds)")


def run(args) -> int:
    from memarch.cli.compile import check_numbers, lm_roles, parse_strategies

    check_numbers(args)
    strategies = parse_strategies(args.strategies, ["guided", "random", "tpe"])
    roles = lm_roles(args)
    if roles is None:
        return compare_main(args, strategies, None)
    with roles:
        return compare_main(args, strategies, roles)


def compare_main(args, strategies: list[str], roles) -> int:
    import optuna

    from memarch.cli._metric import objective_line
    from memarch.cli._progress import Progress
    from memarch.cli.compile import build_metric, space_line, storage_url, tracker_for
    from memarch.optimizers.comparison import compare
    from memarch.optimizers.tracking.tracker import ui_command
    from memarch.pipeline.embed import Embedder, check_embedder
    from memarch.pipeline.resources import Resources
    from memarch.pipeline.space import ArchitectureSpace

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    embedder = Embedder(check_embedder(args.embedder)) if args.embedder else None
    resources = roles.resources(embedder=embedder) if roles else Resources(embedder=embedder)
    metric = build_metric(args, resources)
    lm = roles.task if roles else None
    space = ArchitectureSpace(metric.family, lm_available=lm is not None,
                              opt_in=getattr(getattr(metric, "benchmark", None), "opt_in_modules", False))
    landscape = None
    if args.landscape:
        from memarch.optimizers.landscapes.table import Landscape
        from memarch.optimizers.landscapes.compare_oracle import check_landscape

        landscape = Landscape.load(args.landscape)  # a bad file fails here, before any trial runs
        check_landscape(landscape, args.benchmark, metric.family, metric.kwargs.get("objective")
                        or landscape.default_metric)
    from memarch.pipeline.files import writable_dir

    out = writable_dir(args.out)  # before the runs: an hour of trials is not lost to a bad --out
    seeds = args.seeds or 3
    bar = Progress(args.budget * seeds * len(strategies), "compare")
    try:
        cmp = compare(metric, space, strategies, seeds=seeds, budget=args.budget, target=args.target, lm=lm,
                      meta_lm=roles.meta if roles else None, storage=storage_url(args), resume=args.resume,
                      tracker_factory=(lambda: tracker_for(args)) if not args.no_tracking else None,
                      baselines=not args.no_baselines, study_prefix=args.study_name or f"compare-{args.benchmark}",
                      on_trial=bar, warm_start=args.warm_start, k=args.k, objectives=args.objectives,
                      select=args.select, space_mode=args.space, first_seed=args.first_seed, pruner=args.pruner)
    finally:
        bar.close()
    png = cmp.plot(out / f"compare-{args.benchmark}.png")
    fronts_png = cmp.plot_fronts(out / f"compare-{args.benchmark}-fronts.png")
    fronts = cmp.fronts()
    budget = f"{metric.memory_budget.describe()}\n" if metric.memory_budget is not None else ""
    table = objective_line(metric) + "\n" + space_line(space, args.space) + "\n" + budget + cmp.table()
    oracle = None
    if landscape is not None:
        from memarch.optimizers.landscapes.compare_oracle import OracleView, check_landscape

        check_landscape(landscape, args.benchmark, metric.family, cmp.objective)
        oracle = OracleView(landscape, cmp.runs, budget=args.budget, objective=cmp.objective)
        table += "\n" + "\n".join(oracle.lines())
    (out / f"compare-{args.benchmark}.txt").write_text(table + "\n")
    (out / f"compare-{args.benchmark}.json").write_text(json.dumps(
        {"rows": cmp.rows(), "baselines": cmp.baselines, "target": cmp.target,
         "winner": cmp.winner(), "objective": cmp.objective, "space": args.space, "failed_baselines": cmp.failed_baselines,
         "runs": {s: [r.to_dict() for r in reps] for s, reps in cmp.runs.items()},
         "evaluations": getattr(metric, "evaluations", None),
         "fronts": fronts.to_dict() if fronts is not None else None,
         "landscape": oracle.to_dict() if oracle is not None else None}, indent=1, default=str))
    print(table)
    print(f"curves: {png}")
    if fronts_png is not None:
        print(f"Pareto fronts: {fronts_png}")
    if not args.no_tracking:
        print(f"MLflow: memarch ui --tracking-uri {args.tracking_uri}  (opens on the study's runs; "
              f"plain `{ui_command(args.tracking_uri)}` lands on the GenAI overview)")
    return 0

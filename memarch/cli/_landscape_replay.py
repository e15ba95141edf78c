"""``memarch landscape replay``: run search strategies against a landscape over many seeds (a trial
is a lookup) and print, per strategy, the pick's test score, captured gain, rank percentile and
trials to a top architecture with bootstrap CIs — after the oracle - best preset gap."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from memarch.errors import MemarchError

HELP = "replay strategies against a landscape over seeds: captured gain, trials to a top architecture, CIs"


def add_arguments(p) -> None:
    from memarch.optimizers.search.settings import DEFAULT_BUDGET

    p.add_argument("file", help="a landscape .npz (memarch landscape build)")
    p.add_argument("--strategies", default="guided,random,tpe",
                   help="comma-separated, of guided,archive,random,tpe,nsga2,bruteforce,tpe-multivariate,tpe-independent,nsga3,gp,qmc,hybrid; "
                   "NAME@none runs NAME without the warm start (default guided,random,tpe)")
    p.add_argument("--seeds", type=int, default=50, help="seeds per strategy (default 50)")
    p.add_argument("--first-seed", type=int, default=0,
                   help="seeds run from this one (default 0): measure on seeds other than those a setting was chosen on")
    p.add_argument("--budget", type=int, default=DEFAULT_BUDGET,
                   help=f"distinct architectures per run (default {DEFAULT_BUDGET})")
    p.add_argument("--horizon", type=int, default=None,
                   help="trials to continue to, to time the top (default 10 x budget)")
    p.add_argument("--budgets", default=None, metavar="N,N,...",
                   help="budgets to choose a pick at for the protocol table (regret per budget, paired tests; "
                        "default 5,10,20,40 up to the horizon, and --budget)")
    p.add_argument("--reference", default="tpe", metavar="STRATEGY",
                   help="the strategy every other is paired against in the protocol table (default tpe)")
    p.add_argument("--metric", default=None, metavar="NAME",
                   help="a metric the landscape stores (default answer_span when stored)")
    p.add_argument("--warm-start", choices=("presets", "none"), default="presets",
                   help="round 0 of every strategy: k seeded presets (default) or none")
    p.add_argument("--k", type=int, default=3, help="guided proposals per round and warm-start size (default 3)")
    p.add_argument("--top", type=float, default=0.01, help="share of architectures that count as top (default 0.01)")
    p.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    p.add_argument("--pruner", default="none", metavar="NAME",
                   help="none (default), median, sha, hyperband or wilcoxon: trials are looked up dialogue by "
                        "dialogue and may stop early; budget and horizon count full evaluations. A strategy "
                        "may name its own (--strategies tpe,tpe+wilcoxon) to compare both on the same seeds")
    p.add_argument("--out", default=None, help="write the table (.txt), the runs (.json) and the curves (.png) "
                   "as OUT.txt / OUT.json / OUT.png")


def run(args) -> int:
    import optuna

    from memarch.optimizers.landscapes.table import Landscape
    from memarch.optimizers.landscapes.replay import Replay, parse_strategy

    for name, value, low in (("--seeds", args.seeds, 1), ("--first-seed", args.first_seed, 0),
                             ("--budget", args.budget, 1), ("--k", args.k, 1),
                             ("--workers", args.workers, 1)):
        if value < low:
            raise MemarchError(f"{name} must be at least {low}, got {value}")
    if args.horizon is not None and args.horizon < args.budget:
        raise MemarchError(f"--horizon ({args.horizon}) must be at least --budget ({args.budget})")
    if not 0 < args.top < 1:
        raise MemarchError(f"--top must be a share between 0 and 1, got {args.top}")
    from memarch.optimizers.landscapes.protocol import BUDGETS

    horizon = args.horizon or 10 * args.budget
    try:
        budgets = (tuple(int(b) for b in args.budgets.split(",") if b.strip()) if args.budgets is not None
                   else tuple(b for b in BUDGETS if b <= horizon))
    except ValueError:
        raise MemarchError(f"--budgets: expected integers separated by commas, not {args.budgets!r}") from None
    if any(b < 1 for b in budgets):
        raise MemarchError(f"--budgets must be at least 1 each, got {args.budgets}")
    if args.horizon is not None and budgets and max(budgets) > args.horizon:
        raise MemarchError(f"--budgets {max(budgets)} is past --horizon {args.horizon}")
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    if not strategies:
        raise MemarchError("--strategies names no strategy")
    for s in strategies:
        parse_strategy(s)
    from memarch.optimizers.pruners import check_pruner

    check_pruner(args.pruner)
    land = Landscape.load(args.file)
    if args.out:
        from memarch.pipeline.files import writable_dir

        writable_dir(Path(args.out).parent or ".")  # before the runs, not when they are saved
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    replay = Replay(land, metric=args.metric, budget=args.budget, horizon=args.horizon,
                    warm_start=args.warm_start, k=args.k, top_share=args.top, pruner=args.pruner, budgets=budgets)
    from tqdm import tqdm

    bar = tqdm(total=len(strategies) * args.seeds, desc="replay", unit="run", leave=False, file=sys.stderr)
    try:
        report = replay.run_all(strategies, range(args.first_seed, args.first_seed + args.seeds), workers=args.workers, progress=lambda r: bar.update(1))
    finally:
        bar.close()
    from memarch.optimizers.landscapes.protocol import ProtocolReport

    protocol = ProtocolReport(report, reference=args.reference)
    table = report.table() + "\n" + protocol.table()
    print(table)
    if args.out:
        out = Path(args.out)
        from memarch.pipeline.files import atomic_write_json

        out.with_suffix(".txt").write_text(table + "\n")
        atomic_write_json(out.with_suffix(".json"), json.loads(json.dumps(
            {**report.to_dict(), "protocol": protocol.to_dict()}, default=str)))
        png = report.plot(out.with_suffix(".png"))
        regret = protocol.plot(out.parent / f"{out.name}-regret.png")
        print(f"written: {out.with_suffix('.txt')}, {out.with_suffix('.json')}, {png}, {regret}")
    return 0

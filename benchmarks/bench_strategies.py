"""Issue 50: the search strategies on one protocol, on a landscape with headroom (LM-free; built with
`memarch landscape build --levers ...`). Prints, per landscape:

1. what there is to find: rows, the oracle (best test score), the best preset on test, their gap with
   its paired bootstrap CI over test questions, and the noise of one architecture's score: the test
   split's (1.96 standard errors of the best preset) and the split's — the spread of the best
   preset's test score and of the gap over ``--resplits`` random re-splits of the dialogues
   (LoCoMo) or instances (LongMemEval) into splits of the same sizes. (The seed of an LM-free
   evaluation changes nothing: the same architecture on the same split scores the same.)
2. for each warm start (``presets``: the same 3 seeded presets as round 0 for every strategy of a
   seed; ``none``): the replay of every strategy over ``--seeds`` seeds, and the protocol table
   (`memarch.optimizers.landscapes.protocol`): regret at budgets 5, 10, 20 and 40, trials to a
   top-1% architecture, every difference paired against TPE with a bootstrap CI and a Wilcoxon test,
   the default strategy chosen on validation, and the goal's verdict. Tables, JSON and PNGs go to --out.

    .venv/bin/python benchmarks/bench_strategies.py /work/land/locomo.npz --seeds 50 --workers 2 --out OUT

Nothing is tuned on test: every pick is chosen on validation; test scores only report.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def split_noise(land, metric: str, resplits: int, seed: int = 0) -> dict:
    """The best preset's test score and the oracle - best preset gap over random re-splits of the
    units (dialogues / instances) into splits of the built sizes; per-query scores as stored."""
    from memarch.optimizers.pruners.instances import instance_of

    qids = land.arrays["query_id"].tolist()
    units = sorted({instance_of(q) for q in qids})
    unit_of = np.array([units.index(instance_of(q)) for q in qids])
    n_test = len({instance_of(qids[i]) for i in land.splits["test"]})
    scores = land.scores(metric).astype(np.float64)
    rows = [i for i, k in enumerate(land.keys) if k != "none"]
    presets = sorted({land.index(k) for k in land.presets.values()})
    rng = np.random.default_rng(seed)
    best_preset, gap = [], []
    for _ in range(resplits):
        test_units = rng.choice(len(units), n_test, replace=False)
        idx = np.flatnonzero(np.isin(unit_of, test_units))
        mean = scores[:, idx].mean(axis=1)
        bp = max(mean[p] for p in presets)
        best_preset.append(bp)
        gap.append(max(mean[r] for r in rows) - bp)
    q = lambda x: [float(np.quantile(x, a)) for a in (0.025, 0.5, 0.975)]  # noqa: E731
    return {"resplits": resplits, "test_units": n_test, "units": len(units),
            "best_preset_test": q(best_preset), "best_preset_sd": float(np.std(best_preset, ddof=1)),
            "gap": q(gap)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("landscape", help="a landscape .npz")
    ap.add_argument("--strategies", default="guided,hybrid,tpe,random")
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--budget", type=int, default=40)
    ap.add_argument("--horizon", type=int, default=60, help="trials to continue to, to time the top")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--warm-starts", default="presets,none")
    ap.add_argument("--metric", default=None)
    ap.add_argument("--resplits", type=int, default=200, help="random re-splits for the split noise (0: none)")
    ap.add_argument("--out", default="mlruns/bench/strategies")
    args = ap.parse_args()
    if not Path(args.landscape).exists():
        print(f"no landscape at {args.landscape}; skipped (build one with memarch landscape build --levers)")
        return 0
    import optuna

    from memarch.optimizers.landscapes.protocol import BUDGETS, ProtocolReport
    from memarch.optimizers.landscapes.replay import Replay
    from memarch.optimizers.landscapes.table import Landscape
    from memarch.pipeline.files import atomic_write_json

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    land = Landscape.load(args.landscape)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = Path(args.landscape).stem
    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    budgets = tuple(b for b in BUDGETS if b <= args.horizon)
    lines = [f"bench_strategies {name}: load {os.getloadavg()[0]:.2f} at start, {os.cpu_count()} CPUs"]
    for warm in [w.strip() for w in args.warm_starts.split(",") if w.strip()]:
        replay = Replay(land, metric=args.metric, budget=args.budget, budgets=budgets, horizon=args.horizon,
                        warm_start=warm)
        if warm == args.warm_starts.split(",")[0].strip() and args.resplits > 0:
            noise = split_noise(land, replay.metric, args.resplits)
            g = replay.table
            lines.append(f"split noise over {noise['resplits']} re-splits ({noise['test_units']} of {noise['units']} "
                         f"units in test): best preset's test score median {noise['best_preset_test'][1]:.4f} "
                         f"[{noise['best_preset_test'][0]:.4f}, {noise['best_preset_test'][2]:.4f}] (sd "
                         f"{noise['best_preset_sd']:.4f}); oracle - best preset {noise['gap'][1]:+.4f} "
                         f"[{noise['gap'][0]:+.4f}, {noise['gap'][2]:+.4f}] (a maximum over {len(g.rows)} rows: "
                         f"it flatters)")
            atomic_write_json(out / f"{name}-noise.json", noise)
            print(lines[-1], flush=True)
        started = time.perf_counter()
        report = replay.run_all(strategies, range(args.first_seed, args.first_seed + args.seeds), workers=args.workers)
        protocol = ProtocolReport(report, reference="tpe")
        wall = time.perf_counter() - started
        text = report.table() + "\n" + protocol.table()
        lines += [f"--- warm start {warm}: {args.seeds} seeds (from {args.first_seed}), budget {args.budget}, "
                  f"horizon {replay.horizon}; {wall / 60:.1f} min with {args.workers} workers", text]
        stem = out / f"{name}-{warm}"
        Path(f"{stem}.txt").write_text(text + "\n")
        atomic_write_json(Path(f"{stem}.json"), json.loads(json.dumps(
            {**report.to_dict(), "protocol": protocol.to_dict(), "wall_s": round(wall, 1)}, default=str)))
        report.plot(Path(f"{stem}.png"))
        protocol.plot(Path(f"{stem}-regret.png"))
        print("\n".join(lines[-2:]), flush=True)
    Path(out / f"{name}.txt").write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What a replay measured, with its uncertainty: per strategy the median and bootstrap 95% CI over
seeds of the pick's test score, captured gain, rank percentile and trials to a top architecture;
the oracle - best preset gap with its CI over test questions first; ratios between strategies."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from memarch.optimizers.search.bootstrap import bootstrap_ci, ratio_ci


class ReplaySettings(Protocol):
    """What a report reads of the replay that made it (a `Replay`)."""

    table: Any
    horizon: int
    budget: int


@dataclass
class ReplayRun:
    """One strategy, one seed: what it evaluated, what it picked, how far the pick is from the best."""

    strategy: str
    seed: int
    keys: list[str]  # distinct evaluated architectures in trial order (up to the horizon)
    pick: str  # chosen on validation among the first `budget`
    pick_validation: float
    pick_test: float
    trials_to_top: int | None  # 1-based; None: no top architecture within the horizon
    curve: list[float]  # best-so-far search score per distinct evaluation
    counts: dict[str, int] = field(default_factory=dict)
    stopped: str | None = None
    cost_to_top: float | None = None  # full evaluations spent when the first top one completed (None: not within the horizon)
    cost: float = 0.0  # full evaluations the run spent (a pruned trial costs the share of dialogues it saw)
    pruned: int = 0  # trials a pruner stopped
    # budget -> the pick chosen on validation among the run's first `budget` distinct architectures:
    # {"pick", "validation", "test"} (the replay's budget, and its `budgets`; protocol.py reads them)
    picks: dict[int, dict[str, Any]] = field(default_factory=dict)


class ReplayReport:
    """The replay's runs and their statistics.

    Example::

        report = replay.run_all(["guided", "random"], seeds=range(50))
        report.gap()                     # oracle - best preset on test, with its CI
        report.rows()[0]["captured_gain"]
        report.plot("replay.png")
    """

    def __init__(self, replay: ReplaySettings, runs: list[ReplayRun]):
        self.replay = replay
        self.runs = runs
        self.table_ = replay.table
        self.strategies = list(dict.fromkeys(r.strategy for r in runs))

    def by_strategy(self, strategy: str) -> list[ReplayRun]:
        return [r for r in self.runs if r.strategy == strategy]

    # -- the landscape ------------------------------------------------------------------------------
    def gap(self) -> dict[str, Any]:
        """Oracle - best preset on test: the mean paired difference over test questions with its
        bootstrap CI, and the test split's noise (1.96 standard errors of the best preset's mean)."""
        t = self.table_
        land = t.landscape
        out: dict[str, Any] = {"oracle": land.keys[t.oracle], "oracle_test": float(t.test[t.oracle]),
                               "best_preset": t.best_preset, "questions": int(len(land.splits["test"]))}
        if t.best_preset is None:
            return out
        row = t.presets[t.best_preset]
        out["best_preset_key"] = land.keys[row]
        out["best_preset_test"] = float(t.test[row])
        d = t.query_scores(t.oracle) - t.query_scores(row)
        mean, lo, hi = bootstrap_ci(d, np.mean)
        base = t.query_scores(row)
        noise = 1.96 * float(base.std(ddof=1) / math.sqrt(len(base))) if len(base) > 1 else float("nan")
        out.update(gap=mean, gap_low=lo, gap_high=hi, noise=noise, within_noise=bool(lo <= 0 or mean <= noise))
        return out

    # -- per strategy -------------------------------------------------------------------------------
    def rows(self) -> list[dict[str, Any]]:
        t = self.table_
        gap = self.gap()
        bp = gap.get("best_preset_test")
        denom = (gap["oracle_test"] - bp) if bp is not None else float("nan")
        horizon, budget = self.replay.horizon, self.replay.budget
        out = []
        for s in self.strategies:
            runs = self.by_strategy(s)
            tests = [r.pick_test for r in runs]
            gains = [(r.pick_test - bp) / denom if bp is not None and denom > 1e-12 else float("nan") for r in runs]
            ranks = [t.rank_percentile(r.pick) for r in runs]
            hits = [r.trials_to_top if r.trials_to_top is not None else horizon + 1 for r in runs]
            costs = [r.cost_to_top if r.cost_to_top is not None else horizon + 1 for r in runs]
            best_at_budget = [r.curve[min(budget, len(r.curve)) - 1] for r in runs if r.curve]
            out.append({
                "strategy": s, "seeds": len(runs),
                "pick_test": bootstrap_ci(tests), "captured_gain": bootstrap_ci(gains),
                "rank_percentile": bootstrap_ci(ranks), "trials_to_top": bootstrap_ci(hits),
                "top_within_budget": sum(h <= budget for h in hits) / len(runs),
                "top_within_horizon": sum(h <= horizon for h in hits) / len(runs),
                "cost_to_top": bootstrap_ci(costs), "top_within_budget_cost": sum(c <= budget for c in costs) / len(runs),
                "pruned": float(np.median([r.pruned for r in runs])),
                "best_search_at_budget": float(np.median(best_at_budget)) if best_at_budget else float("nan"),
                "picks_top_share": sum(r.pick in t.top for r in runs) / len(runs),
                "distinct_picks": len({r.pick for r in runs}),
                "stopped": sum(r.stopped is not None for r in runs),
                "counts": _sum_counts(runs),
            })
        return out

    def ratios(self, of: str = "guided") -> dict[str, tuple[float, float, float]]:
        """median trials to a top architecture of ``of`` / that of every other strategy, with CIs."""
        horizon = self.replay.horizon
        mine = [r.trials_to_top or horizon + 1 for r in self.by_strategy(of)]
        if not mine:
            return {}
        return {s: ratio_ci(mine, [r.trials_to_top or horizon + 1 for r in self.by_strategy(s)])
                for s in self.strategies if s != of}

    def cost_ratios(self) -> dict[str, tuple[float, float, float]]:
        """For each ``X+pruner`` strategy with a plain ``X`` beside it: median evaluation cost to a
        top architecture of the pruned runs / that of the unpruned ones, with its CI."""
        horizon, out = self.replay.horizon, {}
        for s in self.strategies:
            base = s.partition("+")[0]
            if s != base and base in self.strategies:
                pruned = [r.cost_to_top if r.cost_to_top is not None else horizon + 1 for r in self.by_strategy(s)]
                plain = [r.cost_to_top if r.cost_to_top is not None else horizon + 1 for r in self.by_strategy(base)]
                out[s] = ratio_ci(pruned, plain)
        return out

    # -- output ---------------------------------------------------------------------------------------
    def table(self) -> str:
        rp, t, land = self.replay, self.table_, self.table_.landscape
        g = self.gap()
        n_q = {s: len(land.splits[s]) for s in ("search", "validation", "test")}
        lines = [f"landscape {land.path or ''}: {land.benchmark}, {len(t.rows)} architectures, questions "
                 f"search/validation/test {n_q['search']}/{n_q['validation']}/{n_q['test']} "
                 f"(split by {land.meta.get('split', {}).get('split_by', '?')}); metric {rp.metric}",
                 f"protocol: budget {rp.budget} distinct architectures per run ("
                 + (f"warm start presets: {rp.k} seeded presets, the same for every strategy of a seed"
                    if rp.warm_start == "presets" else "no warm start") + "), pick chosen on validation "
                 f"among {rp.finalists} finalists; runs continue to {rp.horizon} trials to time the top; "
                 f"top = best {t.n_top} by search score (ties: lower memory cost); medians [95% bootstrap CI] "
                 f"over seeds"]
        if g.get("best_preset") is not None:
            verdict = ("WITHIN the test split's noise: the space has no leverage here, captured gain is "
                       "not meaningful" if g["within_noise"] else "outside the test split's noise")
            lines.append(f"oracle (best test score) {g['oracle_test']:.4f} {g['oracle']}; best preset on test "
                         f"{g['best_preset']} {g['best_preset_test']:.4f} {g['best_preset_key']}; gap "
                         f"{g['gap']:+.4f} [{g['gap_low']:+.4f}, {g['gap_high']:+.4f}] over {g['questions']} test "
                         f"questions; noise (1.96 SE) {g['noise']:.4f}: {verdict}")
        lines += strategy_lines(self.rows(), self.ratios())
        if any("+" in s for s in self.strategies) or getattr(rp, "pruner", "none") != "none":
            lines.append("in full-evaluation equivalents (a pruned trial costs the share of dialogues it saw):")
            for r in self.rows():
                lines.append(f"  {r['strategy']}: evaluation cost to top {_ci(r['cost_to_top'], 1)}, top within "
                             f"budget {r['top_within_budget_cost']:.0%}, trials pruned per run {r['pruned']:.0f} (median)")
        for s, (m, lo, hi) in self.cost_ratios().items():
            lines.append(f"evaluation cost to top, {s} / {s.partition('+')[0]}: {m:.2f} [{lo:.2f}, {hi:.2f}]"
                         + ("  (CI below 1/2)" if hi < 0.5 else "  (CI below 1)" if hi < 1 else ""))
        for r in self.rows():
            shown = {k: v for k, v in r["counts"].items() if v and k not in ("evaluated", "rounds")}
            extra = f"; stopped early in {r['stopped']} runs" if r["stopped"] else ""
            lines.append(f"{r['strategy']}: {r['distinct_picks']} distinct picks, {r['picks_top_share']:.0%} of "
                         f"picks in the top; " + (", ".join(f"{k} {v}" for k, v in sorted(shown.items()))
                                                   or "no invalid draws, repeats, failures or fallbacks") + extra)
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        rp = self.replay
        return {"landscape": self.table_.landscape.path, "metric": rp.metric, "budget": rp.budget,
                "horizon": rp.horizon, "warm_start": rp.warm_start, "k": rp.k, "top": sorted(self.table_.top),
                "gap": self.gap(), "rows": self.rows(),
                "ratios": {s: list(v) for s, v in self.ratios().items()},
                "cost_ratios": {s: list(v) for s, v in self.cost_ratios().items()},
                "runs": [{"strategy": r.strategy, "seed": r.seed, "pick": r.pick, "pick_test": r.pick_test,
                          "pick_validation": r.pick_validation, "trials_to_top": r.trials_to_top,
                          "evaluated": r.keys[:rp.budget], "counts": r.counts, "stopped": r.stopped,
                          "cost_to_top": r.cost_to_top, "cost": r.cost, "pruned": r.pruned,
                          "picks": {str(b): v for b, v in r.picks.items()}}
                         for r in self.runs]}

    def plot(self, path: str | Path) -> Path:
        """Two panels: the median best-so-far search score (band: interquartile range over seeds),
        and the share of seeds that have evaluated a top architecture, per trial."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        rp = self.replay
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
        x = np.arange(1, rp.horizon + 1)
        for s in self.strategies:
            runs = self.by_strategy(s)
            curves = np.array([(r.curve + [r.curve[-1]] * rp.horizon)[:rp.horizon] for r in runs if r.curve])
            line, = ax1.plot(x, np.median(curves, axis=0), label=f"{s} (n={len(runs)})")
            ax1.fill_between(x, np.quantile(curves, 0.25, axis=0), np.quantile(curves, 0.75, axis=0),
                             alpha=0.15, color=line.get_color())
            hits = np.array([r.trials_to_top or rp.horizon + 1 for r in runs])
            ax2.step(x, [(hits <= i).mean() for i in x], where="post", label=s, color=line.get_color())
        for ax in (ax1, ax2):
            ax.axvline(rp.budget, ls=":", color="grey", lw=1)
            ax.set_xlabel("distinct architectures evaluated")
            ax.legend(fontsize=8)
        ax1.set_ylabel(f"best-so-far search {rp.metric}")
        ax2.set_ylabel(f"share of seeds with a top-{self.table_.n_top} architecture")
        fig.suptitle(f"replay on {self.table_.landscape.benchmark} ({len(self.table_.rows)} architectures); "
                     f"dotted: budget {rp.budget}", fontsize=9)
        from memarch.optimizers.search.curves import save_figure

        return save_figure(fig, path)


def strategy_lines(rows: list[dict[str, Any]], ratios: dict[str, tuple[float, float, float]]) -> list[str]:
    """The per-strategy table (pick's test score, captured gain, rank, trials to top with CIs) and
    the guided / other ratio lines, as replays and `compare --landscape` print them. A row's
    ``note`` is appended to its line."""
    w = max([14] + [len(r["strategy"]) + 2 for r in rows])  # tpe-multivariate@none fits
    head = (f"{'strategy':<{w}}{'pick test':>24}{'captured gain':>24}{'rank pct':>22}"
            f"{'trials to top':>22}{'top<=budget':>12}")
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['strategy']:<{w}}{_ci(r['pick_test'], 4):>24}{_ci(r['captured_gain'], 2):>24}"
                     f"{_ci(r['rank_percentile'], 1):>22}{_ci(r['trials_to_top'], 0):>22}"
                     f"{r['top_within_budget']:>12.0%}" + (f"  ({r['note']})" if r.get("note") else ""))
    for s, (m, lo, hi) in ratios.items():
        lines.append(f"trials to top, guided / {s}: {m:.2f} [{lo:.2f}, {hi:.2f}]" + ("  (CI below 1)" if hi < 1 else ""))
    return lines


def _ci(v: tuple[float, float, float], digits: int) -> str:
    m, lo, hi = v
    if math.isnan(m):
        return "n/a"
    return f"{m:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _sum_counts(runs: list[ReplayRun]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in runs:
        for k, v in r.counts.items():
            out[k] = out.get(k, 0) + int(v)
    return out

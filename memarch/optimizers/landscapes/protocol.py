"""The protocol strategies are compared on (issue 50, after arXiv 2606.21641): every strategy of a seed
starts from the same warm start and is cut at the same budgets of distinct architectures (5, 10, 20,
40); per budget it is scored by the **simple regret** (the table's oracle test score minus the test
score of the pick chosen on validation among the run's first N architectures), by its pick's test
score and by whether it has met a top-1% architecture; over the whole run by its **trials to a top
architecture**. Every difference against a reference strategy is paired by seed: a paired bootstrap
95% CI of the mean difference and a two-sided Wilcoxon signed-rank test; the ratio of median trials
to a top architecture gets a paired bootstrap CI (seeds resampled jointly).

Example::

    replay = Replay(land, budget=40, budgets=BUDGETS, horizon=120)
    report = replay.run_all(["guided", "hybrid", "tpe"], seeds=range(50))
    protocol = ProtocolReport(report, reference="tpe")
    print(protocol.table())
    protocol.plot("regret.png")
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memarch.optimizers.search.bootstrap import BOOTSTRAP, bootstrap_ci

if TYPE_CHECKING:
    from memarch.optimizers.landscapes.report import ReplayReport, ReplayRun

BUDGETS = (5, 10, 20, 40)
DEFAULT_CANDIDATES = ("guided", "hybrid")  # what the project's default strategy is chosen among


@dataclass
class Paired:
    """``strategy`` minus ``reference`` on one measure, paired by seed (negative regret: better)."""

    strategy: str
    reference: str
    measure: str  # "regret@N", "validation_regret@N" or "trials_to_top"
    seeds: int
    mean: float
    low: float
    high: float
    median: float
    wins: int  # seeds where the strategy is better (lower; higher with ``higher_is_better``)
    ties: int
    losses: int
    p_value: float  # two-sided Wilcoxon signed-rank (1.0 when every difference is 0)
    higher_is_better: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def verdict(self) -> str:
        if self.high < 0:
            return f"{self.strategy} lower (CI below 0)"
        if self.low > 0:
            return f"{self.strategy} higher (CI above 0)"
        return "no difference shown (CI spans 0)"


def paired_mean_ci(diffs: Any, *, n: int = BOOTSTRAP, seed: int = 0) -> tuple[float, float, float]:
    """Mean of per-seed differences with its percentile bootstrap 95% CI (the seeds resampled)."""
    return bootstrap_ci(diffs, np.mean, n=n, seed=seed)


def paired_ratio_ci(a: Any, b: Any, *, n: int = BOOTSTRAP, seed: int = 0) -> tuple[float, float, float]:
    """median(a) / median(b) over seeds paired by position, with a bootstrap CI that resamples the
    seeds jointly (each resampled seed brings both of its values)."""
    x, y = np.asarray(list(a), float), np.asarray(list(b), float)
    if len(x) != len(y) or not len(x):
        raise ValueError("paired_ratio_ci needs two equally long, non-empty series")
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n):
        i = rng.integers(0, len(x), len(x))
        boots.append(np.median(x[i]) / np.median(y[i]))
    return float(np.median(x) / np.median(y)), float(np.quantile(boots, 0.025)), float(np.quantile(boots, 0.975))


def wilcoxon_p(diffs: Any) -> float:
    """Two-sided Wilcoxon signed-rank p-value of paired differences; 1.0 when all are 0 (zero
    differences are dropped, as Wilcoxon's original test does)."""
    d = np.asarray(list(diffs), float)
    d = d[np.abs(d) > 1e-12]
    if not len(d):
        return 1.0
    from scipy.stats import wilcoxon

    return float(wilcoxon(d, zero_method="wilcox", alternative="two-sided").pvalue)


def paired(strategy: str, reference: str, measure: str, mine: dict[int, float], theirs: dict[int, float], *,
           higher_is_better: bool = False) -> Paired:
    """The paired comparison of two strategies' per-seed values (only seeds both have)."""
    seeds = sorted(set(mine) & set(theirs))
    d = np.array([mine[s] - theirs[s] for s in seeds], float)
    mean, low, high = paired_mean_ci(d) if len(d) else (float("nan"),) * 3
    eps = 1e-12
    better, worse = int((d > eps).sum()), int((d < -eps).sum())
    if not higher_is_better:
        better, worse = worse, better
    return Paired(strategy, reference, measure, len(seeds), mean, low, high,
                  float(np.median(d)) if len(d) else float("nan"),
                  better, int((np.abs(d) <= eps).sum()), worse, wilcoxon_p(d), higher_is_better)


def paired_test_lines(scores: dict[str, dict[int, float]], reference: str = "tpe") -> list[str]:
    """Each strategy's pick's test score against ``reference``'s, paired by seed (what `memarch
    compare` prints without a landscape, where no oracle gives a regret); [] with one strategy."""
    if len(scores) < 2:
        return []
    ref = reference if reference in scores else next(iter(scores))
    lines = [f"pick's test score paired against {ref} by seed (strategy - {ref}; above 0: the strategy's pick is "
             f"better), mean [paired bootstrap 95% CI], wins/ties/losses, Wilcoxon signed-rank p:"]
    for s, mine in scores.items():
        if s != ref:
            c = paired(s, ref, "test", mine, scores[ref], higher_is_better=True)
            lines.append(f"  {s:<22}{c.mean:+.4f} [{c.low:+.4f}, {c.high:+.4f}]  {c.wins}/{c.ties}/{c.losses}  "
                         f"p={c.p_value:.3g}  {c.verdict()}  ({c.seeds} seeds)")
    return lines


class ProtocolReport:
    """The protocol's tables over a replay's runs (runs made with ``Replay(budgets=...)``).

    Args:
        report: the replay's `ReplayReport`.
        reference: the strategy every other is paired against (default ``tpe``; the first strategy
            when it is absent).
        budgets: the budgets to report (default: every budget all runs were cut at).
        candidates: the strategies the project's default is chosen among, on validation data.
    """

    def __init__(self, report: "ReplayReport", *, reference: str = "tpe", budgets: tuple[int, ...] | None = None,
                 candidates: tuple[str, ...] = DEFAULT_CANDIDATES):
        self.report = report
        self.table_ = report.table_
        self.strategies = report.strategies
        self.reference = reference if reference in self.strategies else self.strategies[0]
        have = set.intersection(*(set(r.picks) for r in report.runs)) if report.runs else set()
        self.budgets = tuple(sorted(b for b in (budgets or have) if b in have))
        self.candidates = tuple(c for c in candidates if c in self.strategies)
        t = self.table_
        self.oracle_test = float(t.test[t.oracle])
        self.oracle_validation = float(max(t.validation[i] for i in t.rows))
        self.horizon = report.replay.horizon

    # -- per-seed values ------------------------------------------------------------------------------
    def _runs(self, strategy: str) -> list["ReplayRun"]:
        return self.report.by_strategy(strategy)

    def regret(self, strategy: str, budget: int) -> dict[int, float]:
        """seed -> oracle test score - the test score of the pick at ``budget``."""
        return {r.seed: self.oracle_test - r.picks[budget]["test"] for r in self._runs(strategy)}

    def validation_regret(self, strategy: str, budget: int) -> dict[int, float]:
        """seed -> the best validation score of the table - the pick's validation score (what the
        default strategy is chosen on: never test)."""
        return {r.seed: self.oracle_validation - float(r.picks[budget]["validation"]) for r in self._runs(strategy)
                if r.picks[budget]["validation"] is not None}

    def trials_to_top(self, strategy: str) -> dict[int, float]:
        """seed -> trials to the first top architecture (horizon + 1 when the run met none)."""
        return {r.seed: float(r.trials_to_top or self.horizon + 1) for r in self._runs(strategy)}

    # -- tables ---------------------------------------------------------------------------------------
    def rows(self) -> list[dict[str, Any]]:
        """Per budget and strategy: regret (mean and median with CIs), the pick's test score, the
        validation regret, and the share of seeds that met a top architecture within the budget."""
        out = []
        for b in self.budgets:
            for s in self.strategies:
                reg = list(self.regret(s, b).values())
                runs = self._runs(s)
                out.append({"budget": b, "strategy": s, "seeds": len(runs),
                            "regret_mean": bootstrap_ci(reg, np.mean), "regret_median": bootstrap_ci(reg),
                            "pick_test": bootstrap_ci([r.picks[b]["test"] for r in runs]),
                            "validation_regret_mean": bootstrap_ci(list(self.validation_regret(s, b).values()), np.mean),
                            "top_within": sum((r.trials_to_top or self.horizon + 1) <= b for r in runs) / len(runs)})
        return out

    def comparisons(self) -> list[Paired]:
        """Every strategy against the reference: regret at each budget, then trials to top."""
        ref, out = self.reference, []
        for s in self.strategies:
            if s == ref:
                continue
            for b in self.budgets:
                out.append(paired(s, ref, f"regret@{b}", self.regret(s, b), self.regret(ref, b)))
            out.append(paired(s, ref, "trials_to_top", self.trials_to_top(s), self.trials_to_top(ref)))
        return out

    def trials_ratio(self, strategy: str, reference: str | None = None) -> tuple[float, float, float]:
        """median trials to top of ``strategy`` / of the reference, paired bootstrap CI."""
        mine, theirs = self.trials_to_top(strategy), self.trials_to_top(reference or self.reference)
        seeds = sorted(set(mine) & set(theirs))
        return paired_ratio_ci([mine[s] for s in seeds], [theirs[s] for s in seeds])

    def default_strategy(self) -> dict[str, Any] | None:
        """Which candidate (guided, hybrid) the evidence picks on validation data: the lower mean
        validation regret at the largest budget, then at each smaller one; None without candidates."""
        if not self.candidates:
            return None
        def key(s: str) -> tuple:
            return tuple(float(np.mean(list(self.validation_regret(s, b).values()) or [math.inf]))
                         for b in reversed(self.budgets))
        scores = {s: key(s) for s in self.candidates}
        best = min(self.candidates, key=lambda s: scores[s])
        return {"strategy": best, "validation_regret_by_budget": {s: dict(zip(reversed(self.budgets), v))
                                                                   for s, v in scores.items()}}

    def goal(self, strategy: str) -> dict[str, Any]:
        """Issue 50's goal for ``strategy`` against the reference: trials to top <= 1/2 of the
        reference's with the CI of the ratio below 1, and regret at the largest budget no worse (the
        paired CI of the difference not above 0)."""
        ratio = self.trials_ratio(strategy)
        last = self.budgets[-1]
        reg = paired(strategy, self.reference, f"regret@{last}", self.regret(strategy, last),
                     self.regret(self.reference, last))
        return {"strategy": strategy, "reference": self.reference, "trials_ratio": ratio,
                "trials_met": ratio[0] <= 0.5 and ratio[2] < 1, "regret_budget": last,
                "regret_difference": reg.to_dict(), "regret_met": reg.low <= 0,
                "met": ratio[0] <= 0.5 and ratio[2] < 1 and reg.low <= 0}

    def table(self) -> str:
        t, rp = self.table_, self.report.replay
        lines = [f"protocol (issue 50): budgets {', '.join(map(str, self.budgets))} distinct architectures; the same "
                 f"warm start ({rp.warm_start}) per seed for every strategy; regret = oracle test "
                 f"{self.oracle_test:.4f} ({t.landscape.keys[t.oracle]}) - the test score of the pick chosen on "
                 f"validation; top = best {t.n_top} by search score; runs continue to {self.horizon} trials; "
                 f"means and medians [95% bootstrap CI] over seeds",
                 f"{'budget':>6}  {'strategy':<22}{'seeds':>6}{'regret mean':>26}{'regret median':>26}"
                 f"{'pick test (median)':>26}{'val. regret':>13}{'top<=b':>8}"]
        for r in self.rows():
            lines.append(f"{r['budget']:>6}  {r['strategy']:<22}{r['seeds']:>6}{_ci(r['regret_mean']):>26}"
                         f"{_ci(r['regret_median']):>26}{_ci(r['pick_test']):>26}"
                         f"{r['validation_regret_mean'][0]:>13.4f}{r['top_within']:>8.0%}")
        lines.append(f"paired against {self.reference} (strategy - {self.reference}; below 0: the strategy is better), "
                     f"mean [paired bootstrap 95% CI], wins/ties/losses over seeds, Wilcoxon signed-rank p:")
        for c in self.comparisons():
            digits = 1 if c.measure == "trials_to_top" else 4
            lines.append(f"  {c.strategy:<22}{c.measure:<16}{c.mean:+.{digits}f} [{c.low:+.{digits}f}, "
                         f"{c.high:+.{digits}f}]  {c.wins}/{c.ties}/{c.losses}  p={c.p_value:.3g}  {c.verdict()}")
        for s in self.strategies:
            if s != self.reference:
                m, lo, hi = self.trials_ratio(s)
                lines.append(f"  trials to top, {s} / {self.reference}: {m:.2f} [{lo:.2f}, {hi:.2f}]"
                             + ("  (CI below 1)" if hi < 1 else "  (CI above 1)" if lo > 1 else ""))
        choice = self.default_strategy()
        if choice is not None:
            g = self.goal(choice["strategy"])
            vr = ", ".join(f"{s} {v[self.budgets[-1]]:.4f}" for s, v in choice["validation_regret_by_budget"].items())
            lines.append(f"default chosen on validation (mean validation regret at {self.budgets[-1]}: {vr}): "
                         f"{choice['strategy']}")
            r = g["trials_ratio"]
            lines.append(f"goal for {g['strategy']} against {g['reference']}: trials to top ratio {r[0]:.2f} "
                         f"[{r[1]:.2f}, {r[2]:.2f}] ({'met' if g['trials_met'] else 'NOT met'}: <= 0.5 with CI below 1); "
                         f"regret at {g['regret_budget']} difference {g['regret_difference']['mean']:+.4f} "
                         f"[{g['regret_difference']['low']:+.4f}, {g['regret_difference']['high']:+.4f}] "
                         f"({'met' if g['regret_met'] else 'NOT met'}: no worse, CI not above 0)")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        choice = self.default_strategy()
        return {"budgets": list(self.budgets), "reference": self.reference, "oracle_test": self.oracle_test,
                "oracle_validation": self.oracle_validation, "horizon": self.horizon,
                "rows": self.rows(), "comparisons": [c.to_dict() for c in self.comparisons()],
                "trials_ratios": {s: list(self.trials_ratio(s)) for s in self.strategies if s != self.reference},
                "default": choice, "goal": self.goal(choice["strategy"]) if choice else None}

    def plot(self, path: str | Path) -> Path:
        """Mean regret against budget per strategy (band: its bootstrap 95% CI over seeds)."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from memarch.optimizers.search.curves import save_figure

        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        for s in self.strategies:
            stats = [bootstrap_ci(list(self.regret(s, b).values()), np.mean) for b in self.budgets]
            line, = ax.plot(self.budgets, [m for m, _, _ in stats], marker="o", label=f"{s} (n={len(self._runs(s))})")
            ax.fill_between(self.budgets, [lo for _, lo, _ in stats], [hi for _, _, hi in stats], alpha=0.15,
                            color=line.get_color())
        ax.set_xscale("log", base=2)
        ax.set_xticks(self.budgets, [str(b) for b in self.budgets])
        ax.set_xlabel("budget (distinct architectures)")
        ax.set_ylabel("simple regret on test (oracle - pick)")
        ax.legend(fontsize=8)
        ax.set_title(f"{self.table_.landscape.benchmark}: {len(self.table_.rows)} architectures, "
                     f"oracle {self.oracle_test:.4f}", fontsize=9)
        return save_figure(fig, path)


def _ci(v: tuple[float, float, float], digits: int = 4) -> str:
    m, lo, hi = v
    if math.isnan(m):
        return "n/a"
    return f"{m:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"

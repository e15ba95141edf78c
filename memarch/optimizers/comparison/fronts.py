"""The multi-objective part of `compare`: each run's search Pareto front, its hypervolume against
one reference point shared by every strategy and seed of the comparison, the median over seeds with
a bootstrap 95% CI, the union of the fronts with seed counts, and the fronts drawn in a PNG."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memarch.optimizers.search.pareto import MARGIN, hypervolume, reference_point
from memarch.optimizers.search.bootstrap import bootstrap_ci
from memarch.optimizers.search.objectives import describe

if TYPE_CHECKING:
    from memarch.optimizers.compile import CompileReport


@dataclass
class FrontSummary:
    """Hypervolumes and fronts of the runs of a comparison.

    Example::

        summary = FrontSummary.of(cmp.runs, ("quality", "memory_words"))
        summary.median["guided"], summary.lines()

    Args:
        objectives: the study objectives (quality first).
        reference: the shared reference point (quality 0; each cost at its largest value over
            every evaluated architecture of every run, plus 10%).
        per_seed: strategy -> hypervolume of each seed's search front.
        median: strategy -> (median, CI low, CI high) over seeds.
        union: strategy -> architecture key -> (search values, seeds whose front holds it).
    """

    objectives: tuple[str, ...]
    reference: tuple[float, ...]
    per_seed: dict[str, list[float]] = field(default_factory=dict)
    median: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    union: dict[str, dict[str, tuple[list[float], int]]] = field(default_factory=dict)

    @classmethod
    def of(cls, runs: dict[str, list["CompileReport"]], objectives: tuple[str, ...]) -> "FrontSummary":
        points = [p for reports in runs.values() for r in reports for p in r.points]
        summary = cls(tuple(objectives), reference_point(points))
        for strat, reports in runs.items():
            summary.per_seed[strat] = [hypervolume([v for _, v in r.search_front()], summary.reference)
                                       for r in reports]
            summary.median[strat] = bootstrap_ci(summary.per_seed[strat])
            union: dict[str, tuple[list[float], int]] = {}
            for r in reports:
                for key, values in r.search_front():
                    union[key] = (values, union.get(key, (values, 0))[1] + 1)
            summary.union[strat] = union
        return summary

    def best(self) -> str:
        """The strategy with the highest median hypervolume (search fronts)."""
        return max(self.median, key=lambda s: (self.median[s][0], s))

    def lines(self) -> list[str]:
        ref = describe(self.objectives, self.reference)
        out = [f"Pareto fronts on the search split ({', '.join(self.objectives)}); hypervolume of the unit "
               f"box from (quality 1, no cost) to the reference ({ref}: quality 0, each cost at its largest "
               f"value over every run + {MARGIN:.0%}), the same for every strategy; median over seeds [95% "
               f"bootstrap CI]"]
        for strat in self.median:
            m, lo, hi = self.median[strat]
            seeds = ", ".join(f"{v:.4f}" for v in self.per_seed[strat])
            out.append(f"{strat}: hypervolume {m:.4f} [{lo:.4f}-{hi:.4f}] (per seed: {seeds})")
            n = len(self.per_seed[strat])
            # Architectures with identical values are one point of the front (LM-free, stores and
            # managers often tie): one line per point, naming the most frequent architecture.
            points: dict[tuple[float, ...], list[tuple[str, int]]] = {}
            for key, (values, count) in self.union[strat].items():
                points.setdefault(tuple(values), []).append((key, count))
            for values in sorted(points, key=lambda v: (-v[0], *v[1:])):
                archs = sorted(points[values], key=lambda kc: (-kc[1], kc[0]))
                key, count = archs[0]
                more = f" (+{len(archs) - 1} more with the same values)" if len(archs) > 1 else ""
                out.append(f"    {describe(self.objectives, list(values))}  {key}  [{count}/{n} seeds]{more}")
        out.append(f"highest median hypervolume: {self.best()}")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"objectives": list(self.objectives), "reference": list(self.reference),
                "hypervolume_per_seed": self.per_seed,
                "hypervolume_median_ci": {s: list(v) for s, v in self.median.items()},
                "front_union": {s: {k: {"values": v, "seeds": c} for k, (v, c) in u.items()}
                                for s, u in self.union.items()}}


def plot_fronts(runs: dict[str, list["CompileReport"]], objectives: tuple[str, ...], path: str | Path,
                title: str = "") -> Path:
    """Each run's search front as a staircase: quality against the first cost (one colour per
    strategy, one line per seed). Above two objectives the other costs are not drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from memarch.optimizers.search.curves import save_figure

    fig, ax = plt.subplots(figsize=(7, 4.2))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (strat, reports) in enumerate(runs.items()):
        colour = colours[i % len(colours)]
        for j, r in enumerate(reports):
            pts = sorted((v[1], v[0]) for _, v in r.search_front())
            if not pts:
                continue
            xs, ys = zip(*pts)
            ax.step(xs, ys, where="post", color=colour, alpha=0.7, marker="o", ms=3,
                    label=f"{strat} ({len(reports)} seeds)" if j == 0 else None)
    ax.set_xlabel(f"{objectives[1]} (lower is better)")
    ax.set_ylabel("quality (search score)")
    ax.set_title(title or "memarch compare: search Pareto fronts, one line per seed", fontsize=9)
    ax.legend(fontsize=8)
    return save_figure(fig, path)

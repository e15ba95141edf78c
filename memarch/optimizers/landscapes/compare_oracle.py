"""A live `compare` measured against a landscape of the same benchmark (``compare --landscape``):
the landscape knows every architecture's score, so each run's trials can be timed to a top-1%
architecture and each pick's captured gain computed against the oracle and the best preset,
exactly as a replay does, with bootstrap CIs over seeds. Nothing here chooses anything: the picks
were chosen on validation by the runs; the landscape only scores them.

The live scores and the landscape's can differ (the landscape was built with other code or
caches): every evaluated architecture is looked up and the disagreement is counted and shown;
architectures the landscape does not hold (``--space full`` knobs, opt-in modules) are counted
as missing, never guessed."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from memarch.errors import MemarchError
from memarch.optimizers.landscapes.replay import LandscapeTable
from memarch.optimizers.landscapes.report import strategy_lines
from memarch.optimizers.search.bootstrap import bootstrap_ci, ratio_ci

if TYPE_CHECKING:
    from memarch.optimizers.landscapes.protocol import ProtocolReport
    from memarch.optimizers.landscapes.table import Landscape
    from memarch.optimizers.compile import CompileReport

AGREE = 1e-6  # |live - landscape| search score below this counts as the same value


def check_landscape(landscape: "Landscape", benchmark: str, family: str, metric: str) -> None:
    """One-line `MemarchError` when the landscape cannot score this compare's runs."""
    if landscape.benchmark != benchmark:
        raise MemarchError(f"--landscape {landscape.path}: built on {landscape.benchmark!r}, "
                           f"not on the compared benchmark {benchmark!r}")
    if landscape.family != family:
        raise MemarchError(f"--landscape {landscape.path}: a {landscape.family} landscape, the compare "
                           f"searches the {family} space")
    if metric not in landscape.metrics:
        raise MemarchError(f"--landscape {landscape.path}: metric {metric!r} is not stored "
                           f"(stored: {', '.join(landscape.metrics)})")


class OracleView:
    """Each strategy's runs scored by the landscape.

    Example::

        view = OracleView(Landscape.load("locomo.npz"), cmp.runs, budget=20, metric="answer_span")
        view.rows()[0]["trials_to_top"]      # (median, low, high) over seeds; budget+1 when never
        print("\\n".join(view.lines()))

    Args:
        landscape: a landscape of the compared benchmark (same splits: check ``agreement()``).
        runs: strategy -> one `CompileReport` per seed (``Comparison.runs``).
        budget: the compare's budget; a run that never met a top architecture counts budget+1.
        metric: the compare's metric.
        top_share: what a top architecture is (the best share by search score, as in replays).
    """

    def __init__(self, landscape: "Landscape", runs: dict[str, list["CompileReport"]], *, budget: int,
                 metric: str, top_share: float = 0.01):
        self.table = LandscapeTable(landscape, metric, top_share)
        self.landscape = landscape
        self.runs = runs
        self.budget = int(budget)
        self.metric = metric

    def _row(self, key: str) -> int | None:
        return self.landscape.index(key) if key in self.landscape else None

    def _first_top(self, report: "CompileReport") -> int:
        hit = self.table.first_top(list(report.evaluated))
        return hit if hit is not None else self.budget + 1

    def _gain_terms(self) -> tuple[float, float] | None:
        t = self.table
        if t.best_preset is None:
            return None
        base = float(t.test[t.presets[t.best_preset]])
        return base, float(t.test[t.oracle]) - base

    def rows(self) -> list[dict[str, Any]]:
        t, terms = self.table, self._gain_terms()
        out = []
        for strategy, reports in self.runs.items():
            rows = [self._row(r.architecture.key()) for r in reports]
            tests = [float(t.test[i]) if i is not None else float("nan") for i in rows]
            gains = [(x - terms[0]) / terms[1] if terms and terms[1] > 1e-12 and not math.isnan(x) else float("nan")
                     for x in tests]
            ranks = [t.rank_percentile(r.architecture.key()) if i is not None else float("nan")
                     for r, i in zip(reports, rows)]
            hits = [self._first_top(r) for r in reports]
            out.append({"strategy": strategy, "seeds": len(reports),
                        "pick_test": bootstrap_ci(tests), "captured_gain": bootstrap_ci(gains),
                        "rank_percentile": bootstrap_ci(ranks), "trials_to_top": bootstrap_ci(hits),
                        "top_within_budget": sum(h <= self.budget for h in hits) / max(1, len(hits)),
                        "picks_missing": sum(i is None for i in rows),
                        "picks_top_share": sum(r.architecture.key() in t.top for r in reports) / max(1, len(reports))})
        return out

    def ratios(self, of: str = "guided") -> dict[str, tuple[float, float, float]]:
        """median trials to a top architecture of ``of`` / that of every other strategy, with CIs."""
        if of not in self.runs:
            return {}
        mine = [self._first_top(r) for r in self.runs[of]]
        return {s: ratio_ci(mine, [self._first_top(r) for r in reps]) for s, reps in self.runs.items() if s != of}

    def agreement(self) -> dict[str, Any]:
        """How the live search scores compare with the landscape's for the same architectures."""
        diffs, missing, seen = [], 0, set()
        for reports in self.runs.values():
            for r in reports:
                for key, point in zip(r.evaluated, r.points):
                    if key in seen:
                        continue
                    seen.add(key)
                    i = self._row(key)
                    if i is None:
                        missing += 1
                    elif point:
                        diffs.append(abs(float(point[0]) - float(self.table.search[i])))
        d = np.asarray(diffs, float)
        return {"architectures": len(seen), "missing": missing, "looked_up": int(len(d)),
                "equal": int((d <= AGREE).sum()) if len(d) else 0,
                "median_abs_diff": float(np.median(d)) if len(d) else float("nan"),
                "max_abs_diff": float(d.max()) if len(d) else float("nan")}

    def lines(self) -> list[str]:
        t, land = self.table, self.landscape
        a = self.agreement()
        out = [f"against the landscape {land.path}: {len(t.rows)} architectures; top = best {t.n_top} by its "
               f"search score; oracle (best test) {float(t.test[t.oracle]):.4f} {land.keys[t.oracle]}"
               + (f"; best preset {t.best_preset} {float(t.test[t.presets[t.best_preset]]):.4f}" if t.best_preset
                  else ""),
               f"scores below are the landscape's; live search scores of the {a['looked_up']} distinct architectures "
               f"evaluated: {a['equal']} equal, median |diff| {a['median_abs_diff']:.4f}, max {a['max_abs_diff']:.4f}"
               + (f"; {a['missing']} not in the landscape (not scored)" if a["missing"] else ""),
               f"medians [95% bootstrap CI] over seeds; trials to top: budget+1 ({self.budget + 1}) when a run "
               f"met no top architecture within its budget"]
        rows = [{**r, "note": f"{r['picks_missing']} picks not in the landscape" if r["picks_missing"] else ""}
                for r in self.rows()]
        return out + strategy_lines(rows, self.ratios())

    def protocol(self, *, reference: str = "tpe", finalists: int = 3) -> "ProtocolReport":
        """Issue 50's protocol over the live runs (protocol.py): regret per budget (5, 10, 20, 40 up to
        the compare's), paired against ``reference``. At the compare's budget the pick is the run's
        own (chosen on live validation); at a smaller budget N it is chosen as a replay would, on the
        landscape's validation scores among the ``finalists`` best of the run's first N by the
        landscape's search score. Every test score is the landscape's."""
        from types import SimpleNamespace

        from memarch.optimizers.landscapes.protocol import BUDGETS, ProtocolReport
        from memarch.optimizers.landscapes.report import ReplayRun

        t = self.table
        budgets = [b for b in BUDGETS if b < self.budget] + [self.budget]
        runs = []
        for strategy, reports in self.runs.items():
            for r in reports:
                keys = [k for k in r.evaluated if k in self.landscape]
                picks = {}
                for b in budgets:
                    key = r.architecture.key() if b == self.budget else self._runoff(r.evaluated[:b], finalists)
                    if key is not None and key in self.landscape:
                        i = self.landscape.index(key)
                        picks[b] = {"pick": key, "validation": float(t.validation[i]), "test": float(t.test[i])}
                runs.append(ReplayRun(strategy=strategy, seed=int(r.seed or 0), keys=keys,
                                      pick=r.architecture.key(), pick_validation=r.validation_score,
                                      pick_test=picks.get(self.budget, {}).get("test", float("nan")),
                                      trials_to_top=t.first_top(list(r.evaluated)), curve=list(r.curve), picks=picks))
        complete = [run for run in runs if all(b in run.picks for b in budgets)]
        view = SimpleNamespace(runs=complete, table_=t, strategies=list(dict.fromkeys(r.strategy for r in complete)),
                               replay=SimpleNamespace(horizon=self.budget, warm_start="presets"),
                               by_strategy=lambda s: [r for r in complete if r.strategy == s])
        return ProtocolReport(view, reference=reference)

    def _runoff(self, keys: list[str], finalists: int) -> str | None:
        """A replay's choice among ``keys``: the best on the landscape's validation scores of the
        ``finalists`` best by its search score (ties: lower memory cost); None when it holds none."""
        t = self.table
        held = sorted((k for k in keys if k in self.landscape),
                      key=lambda k: (-t.search[self._row(k)], t.cost[self._row(k)]))[:finalists]
        return max(held, key=lambda k: t.validation[self._row(k)]) if held else None

    def to_dict(self) -> dict[str, Any]:
        return {"landscape": self.landscape.path, "top": sorted(self.table.top), "agreement": self.agreement(),
                "rows": self.rows(), "ratios": {s: list(v) for s, v in self.ratios().items()}}

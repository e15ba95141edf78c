"""Replay: search strategies run against a landscape as a tabular benchmark (the NAS-Bench way) — a
trial is a lookup returning the real per-query outcomes — over many seeds, on equal terms (same
warm start per seed, budgets of distinct architectures, the pick chosen on validation)."""
from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import optuna

from memarch.optimizers.runoff import choose_on_validation
from memarch.optimizers.landscapes.report import ReplayReport, ReplayRun
from memarch.optimizers.landscapes.snap import Snap, random_order
from memarch.pipeline.presets import warm_start_architectures
from memarch.optimizers.search.runner import Search, StudyStopped
from memarch.optimizers.search.settings import DEFAULT_BUDGET, DEFAULT_FINALISTS, SearchSettings
from memarch.optimizers.search.param_space import ParamSpace
from memarch.optimizers.pruners import check_pruner, instance_of, make_pruner
from memarch.optimizers.search.history import fidelity_of
from memarch.optimizers.samplers.base import report_of
from memarch.optimizers.samplers.strategies import check_strategy, make_sampler
from memarch.optimizers.search.study import make_storage, open_study
from memarch.pipeline.space import ArchitectureSpace, Violation

if TYPE_CHECKING:
    from memarch.optimizers.landscapes.table import Landscape

logger = logging.getLogger(__name__)

WARM_STARTS = ("presets", "none")


def parse_strategy(spec: str) -> tuple[str, str | None, str | None]:
    """``"guided"`` -> ("guided", None, None: the replay's warm start and pruner); ``"guided@none"``
    -> a strategy with its own warm start (the bench's cold-start guided); ``"tpe+wilcoxon"`` -> a
    strategy with its own pruner (`pruners.PRUNERS`), so one replay compares both on equal seeds."""
    spec, _, pruner = spec.partition("+")
    name, _, warm = spec.partition("@")
    check_strategy(name)
    if warm and warm not in WARM_STARTS:
        from memarch.errors import MemarchError

        raise MemarchError(f"unknown warm start {warm!r} in {spec!r}; expected @{' or @'.join(WARM_STARTS)}")
    return name, warm or None, check_pruner(pruner) if pruner else None


class LandscapeSubspace(ArchitectureSpace):
    """The family's LM-free space restricted to what a landscape holds: architectures outside a
    sampled landscape are invalid here (pruned, never counted), so strategies search the table."""

    def __init__(self, landscape: "Landscape"):
        super().__init__(landscape.family, lm_available=False, exclude=landscape.meta.get("exclude") or ())
        self.landscape = landscape

    def violations(self, arch):  # type: ignore[override]
        v = super().violations(arch)
        if not v and arch.canonical().key() not in self.landscape:
            return [Violation("not-in-landscape", f"{arch.key()} is not in the landscape (a sample)")]
        return v

    def enumerate(self, *, valid_only: bool = True):  # type: ignore[override]
        return (a for a in super().enumerate(valid_only=valid_only) if not valid_only or a.key() in self.landscape)


class Replay:
    """Run strategies against a landscape.

    Example::

        land = Landscape.load("locomo.npz")
        replay = Replay(land, metric="answer_span", budget=20)
        report = replay.run_all(["guided", "random", "tpe"], seeds=range(50))
        print(report.table())

    Args:
        landscape: the table.
        metric: a stored metric (default: the landscape's).
        budget: distinct architectures per run (the warm start included); the pick comes from these.
        horizon: how far runs continue to measure trials to a top architecture (>= budget).
        warm_start: ``presets`` (k seeded presets, the same round 0 for every strategy of a seed) or ``none``.
        k: guided proposals per round and warm-start size.
        finalists: architectures re-scored on validation to choose the pick.
        top_share: what a "top" architecture is: the best ``ceil(top_share x N)`` by search score,
            ties broken by lower memory cost (exact ties with the last of them count as top too).
        pruner: ``none`` or a `pruners.PRUNERS` name for strategies without their own
            (``tpe+median``): lookups are handed out dialogue by dialogue and ``budget`` and
            ``horizon`` count full-evaluation equivalents; runs also report the evaluation cost to
            the first (complete) top architecture.
        budgets: more budgets to choose a pick at (each run's first N distinct architectures, the
            pick chosen on validation as at ``budget``), for the regret-per-budget protocol
            (protocol.py); the horizon is raised to the largest.
    """

    def __init__(self, landscape: "Landscape", *, metric: str | None = None, budget: int = DEFAULT_BUDGET,
                 horizon: int | None = None, warm_start: str = "presets", k: int = 3,
                 finalists: int = DEFAULT_FINALISTS,
                 top_share: float = 0.01, threshold: float = 0.5, pruner: str = "none",
                 budgets: tuple[int, ...] = ()):
        from memarch.optimizers.landscapes.evaluator import LandscapeEvaluator

        self.landscape = landscape
        self.evaluator = LandscapeEvaluator(landscape, metric=metric, threshold=threshold)
        self.metric = self.evaluator.metric
        self.budget = int(budget)
        self.budgets = tuple(sorted({int(b) for b in budgets} | {self.budget}))
        self.horizon = max(int(horizon or 10 * budget), self.budgets[-1])
        self.warm_start = warm_start
        self.k, self.finalists, self.top_share = int(k), int(finalists), float(top_share)
        self.space = LandscapeSubspace(landscape)
        self.pruner = check_pruner(pruner)
        self.instances = len({instance_of(q) for q in landscape.arrays["query_id"][landscape.splits["search"]].tolist()})
        self.table = LandscapeTable(landscape, self.metric, top_share)
        # A landscape built with levers (levers.py) is searched as categorical choices plus those
        # knob levels; a sampled one: strategies draw among its architectures (snap.py), runs stop at its size.
        levers = landscape.meta.get("levers") or {}
        self.levels = levers.get("levels") or None
        grid = levers.get("grid", 1)
        self.size = len(self.table.rows)
        self.sampled = self.size < self.space.count_valid() * grid
        if self.horizon > self.size:
            self.horizon = self.size
            self.budget = min(self.budget, self.size)
            self.budgets = tuple(sorted({min(b, self.size) for b in self.budgets}))

    def param_space(self) -> ParamSpace:
        """What strategies search: the categorical space, plus the landscape's lever levels."""
        if self.levels:
            from memarch.optimizers.landscapes.levers import lever_space

            return lever_space(self.space, self.levels)
        return ParamSpace(self.space)

    def run(self, spec: str, seed: int) -> ReplayRun:
        name, warm, pruner = parse_strategy(spec)
        warm, pruner = warm or self.warm_start, pruner or self.pruner
        ss = self.param_space()
        sampler = make_sampler(name, ss, seed=seed, k=self.k, no_memory=lambda: self.evaluator(None, "search"))
        study = open_study(f"{spec}-{seed}", make_storage(None), sampler, space=ss.describe(),
                           pruner=make_pruner(pruner, self.instances))
        warm_keys: set[str] = set()
        if warm == "presets":
            for arch in warm_start_architectures(self.space, seed, self.k)[:self.budget]:
                study.enqueue_trial(ss.to_params(arch), user_attrs={"role": "warm_start"})
                warm_keys.add(arch.key())
        snap = Snap(self.landscape, ss, seed=seed) if self.sampled and name != "random" else None
        if self.sampled and name == "random":  # random search on the table: uniform, without replacement
            for arch in random_order(self.landscape, seed, warm_keys)[:self.horizon - len(warm_keys)]:
                study.enqueue_trial(ss.to_params(arch), user_attrs={"role": "random_order"})
        # Runs continue to the horizon (to time the top); the pick comes from the budget's prefix.
        search = Search(self.evaluator, ss, SearchSettings(budget=self.horizon, pruner=pruner), data="search",
                        callbacks=[snap] if snap else None)
        if snap is not None:
            snap.search = search
        stopped = None
        try:
            history = search.run(study)
        except StudyStopped as exc:  # e.g. a strategy stuck on a small sampled landscape
            from memarch.optimizers.search.history import History

            stopped, history = str(exc), History.from_study(study)
        keys = [r.architecture.key() for r in history.records]
        from memarch.optimizers.search.history import History

        within, cost_to_top, spent = self._costs(study)
        prefix = History(history.records[:self.budget] if pruner == "none" else
                         [r for r in history.records if r.number in within], cache=history.cache)
        pick, val = choose_on_validation(prefix, self.evaluator, "validation", self.finalists)
        picks = {self.budget: self._pick_row(pick.key(), val[pick.key()])}
        for b in self.budgets:  # the same choice on each shorter (or longer) prefix of the run
            if b != self.budget and pruner == "none":
                p, v = choose_on_validation(History(history.records[:b], cache=history.cache), self.evaluator,
                                            "validation", self.finalists)
                picks[b] = self._pick_row(p.key(), v[p.key()])
        counts = dict(search.stats())
        if snap is not None:
            counts["snapped"] = snap.snapped
        counts.update(report_of(sampler).stats())
        return ReplayRun(strategy=spec, seed=seed, keys=keys, pick=pick.key(), pick_validation=val[pick.key()],
                         pick_test=float(self.table.test[self.landscape.index(pick)]),
                         trials_to_top=self.table.first_top(keys), curve=history.best_so_far(),
                         counts=counts, stopped=stopped, cost_to_top=cost_to_top, cost=spent,
                         pruned=len(history.partial), picks=dict(sorted(picks.items())))

    def _pick_row(self, key: str, validation: float | None) -> dict[str, Any]:
        row = self.landscape.index(key)
        return {"pick": key, "validation": validation, "test": float(self.table.test[row])}

    def _costs(self, study: optuna.Study) -> tuple[set[int], float | None, float]:
        """(trials completed within the budget's cost, the cost when the first complete top
        architecture finished, the run's whole cost), in full-evaluation equivalents."""
        from optuna.trial import TrialState

        from memarch.optimizers.search.history import ARCH_ATTR
        from memarch.optimizers.search.trial_function import trial_key

        spent, within, to_top = 0.0, set(), None
        for t in sorted(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)),
                        key=lambda t: t.number):
            cost = fidelity_of(t)
            if not cost:
                continue
            spent += cost
            if t.state == TrialState.COMPLETE and ARCH_ATTR in t.user_attrs:
                if spent <= self.budget + 1e-9:
                    within.add(t.number)
                if to_top is None and trial_key(t) in self.table.top:
                    to_top = spent
        return within, to_top, spent

    def run_all(self, strategies: list[str], seeds: Any, *, workers: int = 1, progress: Any = None) -> "ReplayReport":
        jobs = [(s, int(seed)) for s in strategies for seed in seeds]
        runs: list[ReplayRun] = []
        if workers > 1 and len(jobs) > 1:
            import multiprocessing as mp

            global _WORKER_REPLAY
            _WORKER_REPLAY = self
            with mp.get_context("fork").Pool(workers) as pool:
                for run in pool.imap_unordered(_run_job, jobs):
                    runs.append(run)
                    if progress:
                        progress(run)
        else:
            for job in jobs:
                runs.append(self.run(*job))
                if progress:
                    progress(runs[-1])
        order = {job: i for i, job in enumerate(jobs)}
        runs.sort(key=lambda r: order[(r.strategy, r.seed)])
        return ReplayReport(self, runs)


_WORKER_REPLAY: Replay | None = None


def _run_job(job: tuple[str, int]) -> ReplayRun:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    assert _WORKER_REPLAY is not None
    return _WORKER_REPLAY.run(*job)


class LandscapeTable:
    """What replays are measured against: each architecture's search / validation / test score,
    the top architectures by search score (ties: lower memory cost), the oracle (best test score)
    and the presets."""

    def __init__(self, landscape: "Landscape", metric: str, top_share: float = 0.01):
        self.landscape = landscape
        self.metric = metric
        self.rows = [i for i, k in enumerate(landscape.keys) if k != "none"]
        self.search = landscape.metric_values("search", metric)
        self.validation = landscape.metric_values("validation", metric)
        self.test = landscape.metric_values("test", metric)
        cost_name = "memory_words" if "cost_memory_words" in landscape.arrays else "memory_items"
        self.cost = landscape.cost(cost_name) if f"cost_{cost_name}" in landscape.arrays else np.zeros(len(landscape))
        ranked = sorted(self.rows, key=lambda i: (-self.search[i], self.cost[i], landscape.keys[i]))
        n = max(1, math.ceil(top_share * len(self.rows)))
        # Ties with the n-th (same search score and memory cost) are top too: nothing tells them apart.
        last = ranked[n - 1]
        self.top = {landscape.keys[i] for i in ranked
                    if (self.search[i], -self.cost[i]) >= (self.search[last], -self.cost[last])}
        self.n_top = len(self.top)
        self.search_rank = {landscape.keys[i]: r + 1 for r, i in enumerate(ranked)}
        by_test = sorted(self.rows, key=lambda i: (-self.test[i], self.cost[i], landscape.keys[i]))
        self.oracle = by_test[0]
        self.test_rank = {landscape.keys[i]: r + 1 for r, i in enumerate(by_test)}
        presets = {n: landscape.index(k) for n, k in landscape.presets.items()}
        self.presets = presets
        self.best_preset = max(presets, key=lambda n: (self.test[presets[n]], -self.cost[presets[n]])) if presets else None

    def first_top(self, keys: list[str]) -> int | None:
        return next((i + 1 for i, k in enumerate(keys) if k in self.top), None)

    def rank_percentile(self, key: str) -> float:
        """Where an architecture's test score ranks: 0 = the oracle, 100 = the worst."""
        return 100.0 * (self.test_rank[key] - 1) / max(1, len(self.rows) - 1)

    def query_scores(self, row: int, split: str = "test") -> np.ndarray:
        idx = self.landscape.splits[split]
        return self.landscape.scores(self.metric)[row, idx].astype(np.float64)

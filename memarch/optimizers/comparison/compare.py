"""`compare`: strategies side by side on equal terms — the same warm start per seed, the same
budget of distinct evaluated architectures — over several seeds: best-so-far curves, trials to
reach a target, each run's pick chosen on validation and reported on test beside the
human-designed presets and the no-memory agent; the winning strategy is chosen on validation."""
from __future__ import annotations

import dataclasses
import logging
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from memarch.optimizers.compile import CompileReport, MemarchOptimizer, SearchSettings
from memarch.optimizers.comparison.runs import run_jobs
from memarch.optimizers.comparison.settings import CompareSettings
from memarch.optimizers.compile.counts import NOTHING_COUNTED, describe_counts
from memarch.optimizers.evaluators.base import Evaluator, EvaluatorFunction, as_evaluator
from memarch.pipeline.presets import NO_MEMORY, presets_for
from memarch.pipeline.space import ArchitectureSpace

if TYPE_CHECKING:
    from memarch.optimizers.comparison.fronts import FrontSummary

logger = logging.getLogger(__name__)


def trials_to_target(curve: list[float], target: float) -> int | None:
    """1-based trial at which the best-so-far first reaches ``target`` (None: never)."""
    return next((i + 1 for i, v in enumerate(curve) if v >= target - 1e-12), None)


@dataclass
class Comparison:
    """Runs per strategy and the baselines' test scores.

    Example::

        cmp = compare(metric, "conversation", ["guided", "random", "tpe"], seeds=3, budget=20)
        print(cmp.table()); cmp.plot("compare.png")
    """

    budget: int
    target: float
    runs: dict[str, list[CompileReport]] = field(default_factory=dict)
    baselines: dict[str, float] = field(default_factory=dict)  # preset name / no-memory -> test score
    failed_baselines: dict[str, str] = field(default_factory=dict)  # preset name -> error
    metric: str = ""  # the metric's name (answer_span, task_score, ...)
    warm_start: str = "presets"
    objectives: tuple[str, ...] = ("quality",)
    evaluations: int | None = None  # evaluations run by every run and the baselines (None: not counted)

    def fronts(self) -> "FrontSummary | None":
        """Each strategy's search fronts and hypervolumes (None with one objective)."""
        if len(self.objectives) < 2:
            return None
        from memarch.optimizers.comparison.fronts import FrontSummary

        return FrontSummary.of(self.runs, self.objectives)

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for strat, reports in self.runs.items():
            hits = [trials_to_target(r.curve, self.target) for r in reports]
            reached = [h for h in hits if h is not None]
            tests = [r.test_score for r in reports if r.test_score is not None]  # the runs whose test succeeded
            test_failed = [r for r in reports if getattr(r, "test_error", None)]
            vals = [r.validation_score for r in reports]
            counts: dict[str, int] = {}
            for r in reports:
                for k, v in r.counts.items():
                    counts[k] = counts.get(k, 0) + int(v)
            out.append({
                "strategy": strat, "seeds": len(reports),
                "validation_median": statistics.median(vals),
                "best_search": statistics.median(r.curve[-1] for r in reports),
                "trials_to_target": statistics.median(h if h is not None else self.budget + 1 for h in hits),
                "reached": f"{len(reached)}/{len(reports)}",
                "test_median": statistics.median(tests) if tests else float("nan"),
                "test_min": min(tests) if tests else float("nan"),
                "test_max": max(tests) if tests else float("nan"),
                "test_runs": len(tests), "test_failed": len(test_failed),
                "test_errors": [r.test_error for r in test_failed],
                "tokens": statistics.median(r.tokens for r in reports),
                "picks": sorted({r.architecture.key() for r in reports}),
                "counts": counts,
            })
        return out

    def best_preset(self) -> tuple[str, float] | None:
        named = {k: v for k, v in self.baselines.items() if k != NO_MEMORY}
        return max(named.items(), key=lambda kv: kv[1]) if named else None

    def winner(self) -> str:
        """The strategy whose picks score best on VALIDATION (median over seeds; ties: fewer trials
        to target). Test scores are reported, never used to choose."""
        return max(self.rows(), key=lambda r: (r["validation_median"], -r["trials_to_target"]))["strategy"]

    def table(self) -> str:
        w = max([11] + [len(r["strategy"]) + 1 for r in self.rows()])  # tpe-multivariate fits
        head = (f"{'strategy':<{w}}{'seeds':>6}{'best search':>13}{'trials to target':>18}{'reached':>9}"
                f"{'validation':>12}{'test (median [min-max])':>28}{'tokens':>10}")
        lines = [f"metric: {self.metric or '?'}; budget {self.budget} distinct architectures per run "
                 f"(warm start: {self.warm_start}, the same round 0 for every strategy of a seed); "
                 f"target = {self.target:.4f} (search score); trials to target: median, budget+1 when "
                 f"not reached; picks chosen on validation", head, "-" * len(head)]
        for r in self.rows():
            lines.append(f"{r['strategy']:<{w}}{r['seeds']:>6}{r['best_search']:>13.4f}{r['trials_to_target']:>18g}"
                         f"{r['reached']:>9}{r['validation_median']:>12.4f}{r['test_median']:>11.4f} "
                         f"[{r['test_min']:.4f}-{r['test_max']:.4f}]{r['tokens']:>10.0f}")
        for r in self.rows():  # medians are over the runs whose test evaluation succeeded: said, counted
            if r["test_failed"]:
                lines.append(f"{r['strategy']} test: median over {r['test_runs']} of {r['seeds']} seeds; "
                             f"{r['test_failed']} failed (first: {r['test_errors'][0]})")
        if self.baselines:
            lines.append("-" * len(head))
            bp = self.best_preset()
            if bp:
                lines.append(f"{'best preset':<11} {bp[0]:<29}{'':>23}{bp[1]:>11.4f}")
            if NO_MEMORY in self.baselines:
                lines.append(f"{'no memory':<11} {'':<29}{'':>23}{self.baselines[NO_MEMORY]:>11.4f}")
            for r in self.rows():
                if bp and not r["test_runs"]:
                    lines.append(f"{r['strategy']}: no test score to compare with the strongest hand-designed "
                                 f"memory (every test evaluation failed)")
                elif bp:
                    verdict = "beats" if r["test_median"] > bp[1] else "does not beat"
                    lines.append(f"{r['strategy']}: median pick {verdict} the strongest hand-designed memory "
                                 f"({bp[0]}, {bp[1]:.4f}) on test")
        for name, error in self.failed_baselines.items():
            lines.append(f"baseline {name} FAILED (not in the table): {error}")
        for r in self.rows():
            lines.append(f"{r['strategy']} picks: {', '.join(r['picks'])}")
            pruner = self.runs[r["strategy"]][0].pruner if self.runs.get(r["strategy"]) else "none"
            said = describe_counts(r["counts"], pruner=pruner)
            if said != NOTHING_COUNTED:
                lines.append(f"{r['strategy']} over all seeds: {said}")
        lines.append(f"winner (median validation score of the picks): {self.winner()}")
        if len(self.objectives) == 1:
            lines.append("one objective: quality ties broken by lower memory_words, then read_p95")
        fronts = self.fronts()
        if fronts is not None:
            lines += fronts.lines()
        return "\n".join(lines)

    def plot(self, path: str | Path) -> Path:
        from memarch.optimizers.search.curves import plot_curves

        bp = self.best_preset()
        title = "memarch compare: best-so-far (band: min-max over seeds)" + (f"; best preset {bp[0]}" if bp else "")
        return plot_curves({s: [r.curve for r in reps] for s, reps in self.runs.items()}, path,
                           target=self.target, title=title)

    def plot_fronts(self, path: str | Path) -> Path | None:
        """The search Pareto fronts of every run (None with one objective)."""
        if len(self.objectives) < 2:
            return None
        from memarch.optimizers.comparison.fronts import plot_fronts

        return plot_fronts(self.runs, self.objectives, path)


def compare(evaluator: Evaluator | EvaluatorFunction, space: ArchitectureSpace | str, strategies: list[str],
            settings: SearchSettings | None = None, comparison: CompareSettings | None = None, *, lm: Any = None,
            meta_lm: Any = None, tracker_factory: Callable[[], Any] | None = None, on_trial: Callable | None = None,
            trainset: Any = "search", valset: Any = "validation", testset: Any = "test",
            **setting_changes: Any) -> Comparison:
    """Run every strategy with every seed at the same budget and warm start.

    Example::

        cmp = compare(BenchmarkEvaluator("generated"), "conversation", ["guided", "random", "tpe"],
                      SearchSettings(budget=20), CompareSettings(seeds=3))
        compare(evaluator, "conversation", ["guided", "random"], seeds=3, budget=20)   # by name

    ``settings`` (`SearchSettings`, the defaults of one compile when None) are every run's, with
    the strategy, seed and study name of each run set here; ``comparison`` (`CompareSettings`)
    says the seeds (``first_seed`` .. ``first_seed + seeds - 1``), the ``target`` (default 99% of
    the best search score any run found), the baselines, the studies' prefix and the ``workers``.
    ``setting_changes`` change either by name (``budget=``, ``objectives=``, ``space_mode=``,
    ``pruner=``, ``seeds=``, ``workers=``, ...). With several objectives every study is
    multi-objective and the comparison adds each strategy's fronts and hypervolumes (`fronts`).
    ``workers`` > 1 runs that many (strategy, seed) runs side by side in forked processes (LM-free
    only: an LM serves one process); each run's report is the one it gets alone
    (`memarch.optimizers.comparison.runs`)."""
    settings, comparison = _settings(settings, comparison, setting_changes)
    evaluator = as_evaluator(evaluator)
    if isinstance(space, str):
        space = evaluator.architecture_space(space, lm_available=lm is not None, exclude=settings.exclude)
    space = space.without(settings.exclude)
    names = {(strat, seed): f"{comparison.study_prefix}-{space.family}-{strat}-s{seed}" for strat in strategies
             for seed in comparison.seed_range}
    if settings.storage and not settings.resume:
        _refuse_existing(settings.storage, names)
    if comparison.workers > 1 and (lm is not None or meta_lm is not None):
        from memarch.errors import MemarchError

        raise MemarchError("workers > 1 runs LM-free studies side by side; with an LM, run one at a time")

    # One prefetch for every run (the runs' own are off): the runs read the same texts.
    run_settings = settings.replace(prefetch=False)

    def run_one(job: tuple[str, int], progress: Callable | None) -> CompileReport:
        strat, seed = job
        opt = MemarchOptimizer(evaluator, run_settings.replace(strategy=strat, seed=seed, study_name=names[job]),
                               lm=lm, meta_lm=meta_lm, on_trial=progress,
                               tracker=tracker_factory() if tracker_factory else None)
        before = evaluator.evaluations
        opt.compile(space, trainset=trainset, valset=valset, testset=testset)
        if before is not None:  # evaluations this run paid for (a worker counts its own)
            opt.report.extras["evaluations"] = evaluator.evaluations - before
        logger.info("%s seed %d: pick %s test %s", strat, seed, opt.report.architecture.key(), opt.report.test_score)
        return opt.report

    jobs = list(names)
    runs: dict[str, list[CompileReport]] = {}
    prefetch = evaluator.prefetch([trainset, valset, testset], encoders=space.encoders) if settings.prefetch else None
    try:
        reports = run_jobs(jobs, run_one, workers=comparison.workers, on_trial=on_trial)
    finally:
        if prefetch is not None:
            prefetch.stop()
    for (strat, _), report in zip(jobs, reports):
        runs.setdefault(strat, []).append(report)
    best = max(r.curve[-1] for reports in runs.values() for r in reports)
    metric = next((r.metric for reports in runs.values() for r in reports if r.metric), "")
    target = comparison.target
    cmp = Comparison(budget=settings.budget, target=target if target is not None else 0.99 * best, runs=runs,
                     metric=metric, warm_start=settings.warm_start if isinstance(settings.warm_start, str) else "custom",
                     objectives=settings.objectives)
    before = evaluator.evaluations
    if comparison.baselines:
        _score_baselines(cmp, evaluator, space, testset)
    if before is not None:
        cmp.evaluations = sum(r.extras.get("evaluations", 0) for rs in runs.values() for r in rs) + \
            evaluator.evaluations - before
    return cmp


def _settings(settings: SearchSettings | None, comparison: CompareSettings | None,
              changes: dict[str, Any]) -> tuple[SearchSettings, CompareSettings]:
    """The search's and the comparison's settings, each with its changes by name."""
    own = {f.name for f in dataclasses.fields(CompareSettings)}
    return (SearchSettings.of(settings, **{k: v for k, v in changes.items() if k not in own}),
            CompareSettings.of(comparison, **{k: v for k, v in changes.items() if k in own}))


def _refuse_existing(storage: str, names: dict[tuple[str, int], str]) -> None:
    """Refuse before any run, not after the strategies before a clash ran."""
    import optuna

    from memarch.errors import MemarchError
    from memarch.optimizers.search.study import make_storage

    existing = set(optuna.study.get_all_study_names(make_storage(storage)))
    clash = [n for n in names.values() if n in existing]
    if clash:
        raise MemarchError(f"study {clash[0]!r} already exists ({len(clash)} of this compare's "
                           f"{len(names)} do); pass --resume to continue them or use another --study-name")


def _score_baselines(cmp: Comparison, evaluator: Evaluator, space: ArchitectureSpace, testset: Any) -> None:
    """The presets and the no-memory agent on the test split; a failed one is shown, not scored."""
    for name, arch in [*presets_for(space).items(), (NO_MEMORY, None)]:
        res = evaluator(arch, testset)
        if res.failed:
            cmp.failed_baselines[name] = str(res.error)[:300]
            logger.warning("baseline %s failed on %s: %s", name, testset, res.error)
        else:
            cmp.baselines[name] = res.score

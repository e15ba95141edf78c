"""`CompileReport`: what one compile found — the pick, its scores per split, the search curve, every
evaluated architecture and its values, and the run's counts (`CompileReport.from_run`)."""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memarch.benchmarks.evaluation.costs import lm_tokens
from memarch.optimizers.samplers.base import report_of
from memarch.optimizers.search.objectives import SINGLE, values_of
from memarch.optimizers.search.pareto import objective_front
from memarch.pipeline.architecture import Architecture

if TYPE_CHECKING:
    from memarch.optimizers.compile.run import CompileRun
    from memarch.optimizers.search.history import History
    from memarch.optimizers.search.runner import Search

logger = logging.getLogger(__name__)

# Counts of events logged one by one at INFO (dropped proposals, repair failures, repeats and
# invalid draws pruned, ...), summarised once per run at WARNING so they show at the default level.
WARNED_COUNTS = ("dropped_proposals", "lm_repair_failures", "repeats", "invalid", "failed", "test_failed",
                 "validation_failed", "unrecorded_trials", "diagnoser_lm_fallbacks", "proposer_lm_fallbacks")


def warn_counts(study: str, counts: dict[str, int]) -> str | None:
    """One WARNING line for the run's non-zero `WARNED_COUNTS` (None when all are zero)."""
    shown = [f"{k} {counts[k]}" for k in WARNED_COUNTS if counts.get(k)]
    if not shown:
        return None
    line = f"study {study}: " + ", ".join(shown) + " (each is logged at INFO; counts in the report and MLflow)"
    logger.warning("%s", line)
    return line


@dataclass
class CompileReport:
    """What compile() found: the pick, its scores per split, the search curve, the run's counts.
    ``to_dict()`` has one key per field (``test_result`` aside), named as the field."""

    study: str
    strategy: str
    seed: int | None
    architecture: Architecture
    search_score: float
    validation_score: float
    test_score: float | None  # None: no test split, or its evaluation failed (``test_error``, counted)
    finalists: dict[str, float | None]  # architecture key -> validation score (None: that evaluation failed)
    curve: list[float]  # best-so-far search score per distinct evaluated architecture
    trials: int  # distinct evaluated architectures (the budget's unit)
    invalid_pruned: int
    tokens: float  # LM tokens (in and out, every role) the search's evaluations spent
    wall_s: float
    program_path: str | None = None
    test_result: Any = None
    extras: dict[str, Any] = field(default_factory=dict)
    metric: str = ""  # the metric's name (answer_span, task_score, ...)
    warm_start: list[str] = field(default_factory=list)  # round-0 architectures every strategy shares
    counts: dict[str, int] = field(default_factory=dict)  # invalid, repeats, failed, dropped proposals, ...
    evaluated: list[str] = field(default_factory=list)  # evaluated architectures in trial order
    objectives: tuple[str, ...] = SINGLE
    selection: str = ""  # how the pick was chosen on validation (Selection.describe())
    # every evaluated architecture's search values of the objectives, in trial order
    points: list[list[float]] = field(default_factory=list)
    front: list[str] = field(default_factory=list)  # keys of the search Pareto front (several objectives)
    validation: dict[str, Any] = field(default_factory=dict)  # finalists' validation values, front
    prompts: dict[str, Any] = field(default_factory=dict)  # stage two (PromptReport.to_dict()), when asked for
    test_error: str | None = None  # why the pick's test evaluation failed (``counts["test_failed"]``)
    pruner: str = "none"  # the pruner of the study (its count is said even when 0: `describe_counts`)

    @classmethod
    def from_run(cls, run: "CompileRun") -> "CompileReport":
        """The report of a finished compile, from its record (`CompileRun`): the search's
        ``history``, the runoff's ``finalists`` and ``validation`` details, the pick's
        ``test_result`` (None: not run), ``prompts`` (a `PromptReport` of stage two, or None). A
        failed test evaluation is counted, never a 0.0."""
        from memarch.optimizers.prompts.optimize import NOTHING

        study, settings, pick, history, search, sampler = \
            run.study, run.settings, run.pick, run.history, run.search, run.sampler
        finalists, validation, test_result, prompts = run.finalists, run.validation, run.test_result, run.prompts
        warm_start, wall_s, program_path = run.warm_start, run.wall_s, run.program_path

        best = history.by_key(pick.key())
        test_failed = test_result is not None and test_result.failed
        objectives = settings.objectives
        report = cls(
            study=study, strategy=settings.strategy, seed=settings.seed, architecture=pick,
            search_score=best.score if best else float("nan"), validation_score=finalists[pick.key()],
            test_score=None if test_result is None or test_failed else test_result.score, finalists=finalists,
            curve=history.best_so_far(), trials=len(history), invalid_pruned=len(search.invalid),
            tokens=sum(lm_tokens(r.result.cost) for r in history.records),
            wall_s=wall_s, program_path=program_path, test_result=test_result,
            extras={"strategy_artifacts": (report_of(sampler).rounds or [{}])[-1], "space": settings.space_mode},
            metric=best.result.metadata.get("metric", "") if best else "",
            warm_start=list(warm_start), counts=run_counts(search, history, sampler),
            evaluated=[r.architecture.key() for r in history.records], objectives=objectives,
            selection=settings.selection.describe(),
            points=[list(values_of(r.result, objectives)) for r in history.records],
            front=[r.architecture.key() for r in objective_front(history.records, objectives)]
            if len(objectives) > 1 else [],
            validation=validation, prompts=prompts.to_dict() if prompts is not None else {},
            test_error=str(test_result.error)[:300] if test_failed else None, pruner=settings.pruner)
        if test_failed:
            report.counts["test_failed"] = 1
        failed_finalists = sum(v is None for v in finalists.values())
        if failed_finalists:
            report.counts["validation_failed"] = failed_finalists
        warn_counts(study, report.counts)
        if prompts is not None and prompts.kept != "optimised":  # counted, never silent
            report.counts["prompts_skipped" if prompts.kept == NOTHING else "prompts_kept_original"] = 1
        return report

    def counts_line(self) -> str:
        """The run's counts in words, with the pruner's line (`describe_counts`)."""
        from memarch.optimizers.compile.counts import describe_counts

        return describe_counts(self.counts, pruner=self.pruner)

    def search_front(self) -> list[tuple[str, list[float]]]:
        """(key, search values) of each member of the search Pareto front."""
        at = {k: p for k, p in zip(self.evaluated, self.points)}
        return [(k, at[k]) for k in self.front]

    def tracked_summary(self) -> dict[str, Any]:
        """What the study's parent MLflow run logs at the end: scores (a failed test logs
        ``test_failed`` and its error, no score), the pick, its validation values, the counts."""
        picked = self.validation.get("validation_values", {}).get(self.architecture.key(), {})
        test = {"test_failed": 1, "test_error": self.test_error} if self.test_error else \
            {"test_score": self.test_score if self.test_score is not None else float("nan")}
        return {"search_score": self.search_score, "validation_score": self.validation_score, **test,
                "trials": self.trials, "pick": self.architecture.key(), "selection": self.selection,
                **{f"validation_{n}": v for n, v in picked.items() if n in self.objectives},
                **{f"count_{k}": v for k, v in self.counts.items()},
                **{f"prompts_{k}": v for k, v in self.prompts.items()
                   if k in ("validation_before", "validation_after", "test_after")}}

    def to_dict(self) -> dict:
        out = {"study": self.study, "strategy": self.strategy, "seed": self.seed,
               "architecture": self.architecture.to_dict(), "metric": self.metric,
               "search_score": self.search_score, "validation_score": self.validation_score,
               "test_score": self.test_score, "finalists": self.finalists, "curve": self.curve,
               "trials": self.trials, "invalid_pruned": self.invalid_pruned, "counts": self.counts,
               "warm_start": self.warm_start, "evaluated": self.evaluated, "tokens": self.tokens,
               "wall_s": round(self.wall_s, 2), "program_path": self.program_path,
               "objectives": list(self.objectives), "selection": self.selection, "points": self.points,
               "front": self.front, "validation": self.validation, "pruner": self.pruner}
        if self.test_error:
            out["test_error"] = self.test_error
        if self.prompts:
            out["prompts"] = self.prompts
        return out


def run_counts(search: "Search", history: "History", sampler: Any) -> dict[str, int]:
    """The run's counts: distinct evaluations, what this worker's trials did (invalid, repeats,
    failed, pruned), repeats in the whole study, pruned trials and what they cost, the sampler's own."""
    counts = {"evaluated": len(history), **{k: v for k, v in search.stats().items() if k != "evaluated"},
              "repeats_in_study": history.repeats}
    if history.partial:  # pruned trials: what they cost, in hundredths of a full evaluation
        counts["pruned_in_study"] = len(history.partial)
        counts["pruned_cost_pct"] = round(100 * sum(r.fidelity for r in history.partial))
    counts.update(report_of(sampler).stats())
    return counts


def finite_or_none(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None

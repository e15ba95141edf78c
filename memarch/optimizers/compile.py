"""`MemarchOptimizer`: the search as a DSPy-style optimizer — ``compile(student, trainset=...,
valset=...)`` searches on the train data, picks the architecture on validation, reports it on test
and returns (and saves) a new `MemoryProgram`; the student is never mutated."""
from __future__ import annotations

import dataclasses
import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import optuna

from memarch.errors import MemarchError
from memarch.optimizers.search.pareto import objective_front
from memarch.optimizers.search.history import History
from memarch.pipeline.presets import warm_start_architectures
from memarch.optimizers.prompts.optimize import NOTHING
from memarch.optimizers.runoff import MAX_FRONT_FINALISTS, choose_on_validation  # noqa: F401 (re-exported)
from memarch.optimizers.search.runner import Metric, Search
from memarch.optimizers.search.selection import Selection, parse_selection
from memarch.optimizers.search.param_space import MODES, ParamSpace
from memarch.optimizers.strategies import make_sampler
from memarch.optimizers.search.study import make_storage, open_study
from memarch.optimizers.search.fidelity import make_pruner
from memarch.optimizers.search.objectives import SINGLE, values_of
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.space import ArchitectureSpace

logger = logging.getLogger(__name__)


@dataclass
class CompileReport:
    """What compile() found: the pick, its scores per split, the search curve."""

    study_name: str
    strategy: str
    seed: int | None
    architecture: Architecture
    search_score: float
    validation_score: float
    test_score: float | None  # None: no test split, or its evaluation failed (``test_error``, counted)
    finalists: dict[str, float | None]  # architecture key -> validation score (None: that evaluation failed)
    curve: list[float]  # best-so-far search objective per distinct evaluated architecture
    trials: int  # distinct evaluated architectures (the budget's unit)
    invalid_pruned: int
    tokens: float
    wall_s: float
    program_path: str | None = None
    test_result: Any = None
    extras: dict[str, Any] = field(default_factory=dict)
    objective: str = ""  # the objective's name (answer_span, task_score, ...)
    warm_start: list[str] = field(default_factory=list)  # round-0 architectures every strategy shares
    counts: dict[str, int] = field(default_factory=dict)  # invalid, repeats, failed, dropped proposals, ...
    keys: list[str] = field(default_factory=list)  # evaluated architectures in trial order
    objectives: tuple[str, ...] = SINGLE
    selection: str = ""  # how the pick was chosen on validation (Selection.describe())
    # every evaluated architecture's search values of the objectives, in trial order
    points: list[list[float]] = field(default_factory=list)
    front: list[str] = field(default_factory=list)  # keys of the search Pareto front (several objectives)
    validation: dict[str, Any] = field(default_factory=dict)  # finalists' validation values, front
    prompts: dict[str, Any] = field(default_factory=dict)  # stage two (PromptReport.to_dict()), when asked for
    test_error: str | None = None  # why the pick's test evaluation failed (``counts["test_failed"]``)

    def search_front(self) -> list[tuple[str, list[float]]]:
        """(key, search values) of each member of the search Pareto front."""
        at = {k: p for k, p in zip(self.keys, self.points)}
        return [(k, at[k]) for k in self.front]

    def to_dict(self) -> dict:
        return {"study": self.study_name, "strategy": self.strategy, "seed": self.seed,
                "architecture": self.architecture.to_dict(), "objective": self.objective,
                "search_score": self.search_score, "validation_score": self.validation_score,
                "test_score": self.test_score, "finalists": self.finalists, "curve": self.curve,
                "trials": self.trials, "invalid_pruned": self.invalid_pruned, "counts": self.counts,
                "warm_start": self.warm_start, "evaluated": self.keys, "tokens": self.tokens,
                "wall_s": round(self.wall_s, 2), "program_path": self.program_path,
                "objectives": list(self.objectives), "selection": self.selection, "points": self.points,
                "front": self.front, "validation": self.validation,
                **({"test_error": self.test_error} if self.test_error else {}),
                **({"prompts": self.prompts} if self.prompts else {})}


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


class MemarchOptimizer:
    """Search the memory-architecture space of a family for a metric.

    Example::

        metric = BenchmarkMetric("generated")
        optimizer = MemarchOptimizer(metric=metric, strategy="guided", budget=30)
        program = optimizer.compile("conversation", trainset="search", valset="validation")
        optimizer.report.test_score, program.architecture

    Args:
        metric: ``metric(architecture_or_None, data) -> TrialResult`` (see `BenchmarkMetric`).
        strategy: ``guided`` (default), ``random``, ``tpe`` or ``bruteforce`` (see `STRATEGIES`).
        budget: distinct architectures evaluated on the train data (the warm start included;
            invalid draws, repeats of an evaluated architecture and failed trials do not count).
        lm: the task LM (None: the LM-free space, modules that need an LM drop out).
        meta_lm: the proposer/diagnoser LM of the guided strategy (default: ``lm``).
        seed: sampler / seed-round randomness.
        storage: Optuna storage URL (None: in memory; ``sqlite:///mlruns/optuna.db`` on the CLI).
        study_name: default ``<family>-<strategy>-s<seed>``.
        resume: continue an existing study of that name.
        tracker: a `Tracker` (MLflow) or None.
        finalists: how many top search architectures are re-scored on validation.
        save_path: where the compiled program is saved as JSON (None: not saved).
        resources: what the returned program is built with (default: bundled embedder, ``lm``).
        warm_start: ``"presets"`` (default): round 0 is ``k`` human-designed presets chosen by
            ``seed`` — the same for every strategy of that seed; ``"none"``: no warm start; or a
            list of architectures.
        max_failures: consecutive failed trials that stop the study (one clear error).
        objectives: ``("quality",)`` (default) or quality and costs, e.g. ``("quality",
            "memory_tokens")``: a multi-objective study (see `parse_objectives`).
        select: how the pick is chosen on validation: ``"quality"``, ``"knee"`` or a cost limit
            such as ``"memory_tokens<=5000"`` (see `parse_selection`).
        space_mode: ``categorical`` (the method's space, default) or ``full`` (plus each chosen
            module's numeric knobs as conditional parameters; see `ParamSpace`).
        prompt_optimizer: stage two, once the architecture is chosen: ``"none"`` (default),
            ``"bootstrap"``, ``"mipro"`` or ``"gepa"`` — the DSPy optimizer run over the program's
            and the reader's prompts (see `memarch.optimizers.prompts.optimize.optimize_prompts`).
        prompt_examples, prompt_budget: questions per split inside that optimizer, and its budget.
        pruner: ``none`` (default) or ``median`` / ``sha`` / ``hyperband`` / ``wilcoxon``: trials
            are scored dialogue by dialogue and a pruned one stops early; ``budget`` then counts
            full-evaluation equivalents (`memarch.optimizers.search.fidelity`).
        log_model: with a tracker, log the compiled program as an MLflow pyfunc model of the
            study's parent run (`program_model`; ``report.extras["model_uri"]``).
        register: also register that model under this name in the MLflow model registry.
    """

    def __init__(self, metric: Metric, strategy: str = "guided", budget: int = 30, lm: Any = None,
                 meta_lm: Any = None, *, seed: int | None = 0, k: int = 3, storage: str | None = None,
                 study_name: str | None = None, resume: bool = False, tracker: Any = None, finalists: int = 3,
                 save_path: str | Path | None = None, resources: Any = None,
                 on_trial: Callable | None = None, warm_start: Any = "presets", max_failures: int = 5,
                 objectives: tuple[str, ...] | str = SINGLE, select: str | Selection = "quality",
                 space_mode: str = "categorical", prompt_optimizer: str = "none", prompt_examples: int = 20,
                 prompt_budget: int = 60, log_model: bool = True, register: str | None = None,
                 pruner: str = "none"):
        if budget < 1:
            raise MemarchError(f"budget must be at least 1 trial, got {budget}")
        from memarch.optimizers.search.objectives import parse_objectives

        self.objectives = parse_objectives(objectives)
        self.selection = select if isinstance(select, Selection) else parse_selection(select, self.objectives)
        self.metric = metric
        self.strategy_name = strategy
        self.budget = int(budget)
        self.lm, self.meta_lm = lm, meta_lm
        self.seed, self.k = seed, k
        self.storage_url = storage
        self.study_name = study_name
        self.resume = resume
        self.tracker = tracker
        self.finalists = max(1, finalists)
        self.save_path = save_path
        self.resources = resources
        self.on_trial = on_trial
        if isinstance(warm_start, str) and warm_start not in ("presets", "none"):
            raise MemarchError(f"warm_start must be 'presets', 'none' or a list of architectures, not {warm_start!r}")
        self.warm_start = warm_start
        self.max_failures = max_failures
        if space_mode not in MODES:
            raise MemarchError(f"unknown search space {space_mode!r}; expected one of {', '.join(MODES)}")
        self.space_mode = space_mode
        from memarch.optimizers.prompts.optimize import check_prompt_optimizer

        self.prompt_optimizer = check_prompt_optimizer(prompt_optimizer)
        self.prompt_examples, self.prompt_budget = prompt_examples, prompt_budget
        self.log_model, self.register = log_model, register
        from memarch.optimizers.search.fidelity import check_pruner

        self.pruner = check_pruner(pruner)
        if register and tracker is None:
            raise MemarchError("register needs MLflow tracking (a tracker): the registry is MLflow's")
        self.report: CompileReport | None = None
        self.study: optuna.Study | None = None

    def _space(self, student: Any) -> tuple[ArchitectureSpace, Architecture | None]:
        from memarch.pipeline.program import MemoryProgram

        lm_ok = self.lm is not None
        if isinstance(student, ArchitectureSpace):
            return student, None
        if isinstance(student, MemoryProgram):
            return ArchitectureSpace(student.family or "experience", lm_available=lm_ok), student.architecture
        if isinstance(student, Architecture):
            return ArchitectureSpace(student.family or "experience", lm_available=lm_ok), student
        if isinstance(student, str):
            return ArchitectureSpace(student, lm_available=lm_ok), None
        raise MemarchError(f"compile() takes a family name, an ArchitectureSpace or a MemoryProgram, "
                           f"not {type(student).__name__}")

    def compile(self, student: Any, *, trainset: Any = "search", valset: Any = "validation",
                testset: Any = "test") -> Any:
        """Search on ``trainset``, choose on ``valset``, report on ``testset``; returns a new program."""
        started = time.perf_counter()
        space, start = self._space(student)
        sspace = self.search_space(space)
        sampler = make_sampler(self.strategy_name, sspace, seed=self.seed, k=self.k, lm=self.lm, meta_lm=self.meta_lm,
                               no_memory=lambda: self.metric(None, trainset))  # only `archive` asks for it
        name = self.study_name or f"{space.family}-{self.strategy_name}-s{self.seed}"
        storage = make_storage(self.storage_url)
        self.study = study = open_study(name, storage, sampler, space=sspace.describe(), resume=self.resume,
                                        attrs={"strategy": self.strategy_name, "seed": self.seed},
                                        objectives=self.objectives, pruner=make_pruner(self.pruner))
        warm = self._warm_start(space, start)
        if not study.trials:
            for arch, role in warm:
                study.enqueue_trial(sspace.to_params(arch), user_attrs={"role": role})
        if self.tracker is not None:
            self.tracker.start(study, metric=self.metric, strategy=self.strategy_name, seed=self.seed,
                               budget=self.budget, family=space.family,
                               warm_start=",".join(a.key() for a, _ in warm) or "none")
        search = Search(self.metric, sspace, budget=self.budget, data=trainset, tracker=self.tracker,
                        on_trial=self.on_trial, max_failures=self.max_failures, objectives=self.objectives,
                        pruner=self.pruner)
        history = search.run(study)
        if not history.records:
            raise MemarchError(f"study {name}: no architecture could be evaluated (see the log)")
        chosen: dict[str, Any] = {}
        pick, finalists = choose_on_validation(history, self.metric, valset, self.finalists,
                                               objectives=self.objectives, selection=self.selection, details=chosen)
        test_result = self.metric(pick, testset) if testset is not None else None
        test_failed = test_result is not None and test_result.failed  # None and counted, never a 0.0 score
        if test_failed:
            logger.warning("study %s: the test evaluation of the pick %s failed: %s", name, pick.key(),
                           test_result.error)
        best = history.by_key(pick.key())
        program = self._program(pick, best, finalists[pick.key()], test_result)
        prompts = self._prompts(program, finalists[pick.key()], trainset, valset, testset)
        path = None
        if self.save_path:
            path = str(program.save(self.save_path, include_memory=False))
        self.report = CompileReport(
            study_name=name, strategy=self.strategy_name, seed=self.seed, architecture=pick,
            search_score=best.objective if best else float("nan"), validation_score=finalists[pick.key()],
            test_score=None if test_result is None or test_failed else test_result.objective, finalists=finalists,
            curve=history.best_so_far(), trials=len(history), invalid_pruned=len(search.invalid),
            tokens=sum(sum(v for k, v in r.result.cost.items() if k.startswith("tokens")) for r in history.records),
            wall_s=time.perf_counter() - started, program_path=path, test_result=test_result,
            extras={"strategy_artifacts": (getattr(sampler, "rounds", None) or [{}])[-1], "space": self.space_mode},
            objective=best.result.metadata.get("objective", "") if best else "",
            warm_start=[a.key() for a, _ in warm], counts=self._counts(search, history, sampler),
            keys=[r.architecture.key() for r in history.records], objectives=self.objectives,
            selection=self.selection.describe(),
            points=[list(values_of(r.result, self.objectives)) for r in history.records],
            front=[r.architecture.key() for r in objective_front(history.records, self.objectives)]
            if len(self.objectives) > 1 else [],
            validation=chosen, prompts=prompts.to_dict() if prompts is not None else {},
            test_error=str(test_result.error)[:300] if test_failed else None)
        if test_failed:
            self.report.counts["test_failed"] = 1
        failed_finalists = sum(v is None for v in finalists.values())
        if failed_finalists:
            self.report.counts["validation_failed"] = failed_finalists
        warn_counts(name, self.report.counts)
        if prompts is not None and prompts.kept != "optimised":  # counted, never silent
            self.report.counts["prompts_skipped" if prompts.kept == NOTHING else "prompts_kept_original"] = 1
        if self.tracker is not None:
            import tempfile

            from memarch.optimizers.search.curves import plot_curves

            if self.log_model or self.register:
                self._log_model(program)
            tmp = Path(tempfile.mkdtemp(prefix="memarch-curve-")) / "curve.png"
            plot_curves({self.strategy_name: [self.report.curve]}, tmp, title=f"{name}: best-so-far search objective")
            self.tracker.finish({"search_score": self.report.search_score,
                                 "validation_score": self.report.validation_score,
                                 # a failed test evaluation logs test_failed=1 (and its error), no score
                                 **({"test_failed": 1, "test_error": self.report.test_error} if test_failed else
                                    {"test_score": self.report.test_score if self.report.test_score is not None
                                     else float("nan")}),
                                 "trials": self.report.trials, "pick": pick.key(),
                                 "selection": self.report.selection,
                                 **{f"validation_{n}": v for n, v in
                                    chosen.get("validation_values", {}).get(pick.key(), {}).items()
                                    if n in self.objectives},
                                 **{f"count_{k}": v for k, v in self.report.counts.items()},
                                 **({f"prompts_{k}": v for k, v in (prompts.to_dict() if prompts else {}).items()
                                     if k in ("validation_before", "validation_after", "test_after")})},
                                curve_png=tmp)
        logger.info("compiled %s: search %.4f validation %.4f test %s", pick.key(), self.report.search_score,
                    self.report.validation_score, self.report.test_score)
        return program

    def _prompts(self, program: Any, validation: float, trainset: Any, valset: Any, testset: Any) -> Any:
        """Stage two (`optimize_prompts`) on the compiled program, or None when not asked for; the
        program's evaluation record then holds the scores of the prompts it keeps."""
        if self.prompt_optimizer == "none":
            return None
        from memarch.optimizers.prompts.optimize import optimize_prompts

        if not all(isinstance(s, str) for s in (trainset, valset)) or not isinstance(testset, (str, type(None))):
            raise MemarchError("prompt optimisation needs named splits (trainset, valset, testset)")
        report = optimize_prompts(program, self.metric, self.prompt_optimizer, lm=self.lm, meta_lm=self.meta_lm,
                                  trainset=trainset, valset=valset, testset=testset,
                                  examples=self.prompt_examples, budget=self.prompt_budget, seed=self.seed or 0,
                                  tracker=self.tracker, validation_before=validation)
        logger.info("%s", report.line())
        if report.kept == "optimised" and program.evaluation is not None:
            scores = {**program.evaluation.scores, "validation": report.validation_after,
                      "test": report.test_after}
            program.evaluation = dataclasses.replace(program.evaluation, scores=scores)
        return report

    def _log_model(self, program: Any) -> None:
        """The program as the parent run's MLflow model. A failure is shown (a warning and
        ``extras["model_error"]``) and the compile goes on — unless a registration was asked for."""
        try:
            info = self.tracker.log_program(program, registered_name=self.register)
        except Exception as exc:
            message = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            if self.register:
                raise MemarchError(f"cannot log and register the program as MLflow model {self.register!r}: "
                                   f"{message}") from None
            logger.warning("the compiled program was not logged as an MLflow model: %s", message)
            self.report.extras["model_error"] = message
            return
        self.report.extras["model_uri"] = info.model_uri
        if info.registered_model_version is not None:
            self.report.extras["registered_model"] = f"models:/{self.register}/{info.registered_model_version}"

    def search_space(self, space: ArchitectureSpace) -> ParamSpace:
        """The Optuna view of ``space`` in this optimizer's mode; in the full space ``top_k``
        defaults to what the metric reads with, so a preset queued there is the preset."""
        settings = getattr(self.metric, "program_settings", None)
        defaults = {"retrieve.top_k": settings()["top_k"]} if self.space_mode == "full" and settings else {}
        return ParamSpace(space, self.space_mode, defaults=defaults)

    def _warm_start(self, space: ArchitectureSpace, start: Architecture | None) -> list[tuple[Architecture, str]]:
        """Round 0: the student's architecture first, then the warm start (same for every strategy)."""
        out: list[tuple[Architecture, str]] = []
        if start is not None:
            out.append((space.validate(start).canonical(), "student"))
        if isinstance(self.warm_start, str):
            warm = warm_start_architectures(space, self.seed, self.k) if self.warm_start == "presets" else []
        else:
            warm = [space.validate(a).canonical() for a in self.warm_start]
        keys = {a.key() for a, _ in out}
        for a in warm:
            if a.key() not in keys:
                out.append((a, "warm_start"))
                keys.add(a.key())
        return out[:self.budget]

    @staticmethod
    def _counts(search: Search, history: History, sampler: Any) -> dict[str, int]:
        counts = {"evaluated": len(history), **{k: v for k, v in search.stats().items() if k != "evaluated"},
                  "repeats_in_study": history.repeats}
        if history.partial:  # pruned trials: what they cost, in hundredths of a full evaluation
            counts["pruned_in_study"] = len(history.partial)
            counts["pruned_cost_pct"] = round(100 * sum(r.fidelity for r in history.partial))
        if hasattr(sampler, "stats"):
            counts.update(sampler.stats())
        return counts

    def _program(self, pick: Architecture, best: Any, validation: float, test_result: Any) -> Any:
        """The pick as a program with the top_k and context budget its trials read with, and the
        record of how it was scored (when the metric can say)."""
        from memarch.pipeline.program import MemoryProgram
        from memarch.pipeline.resources import Resources

        settings = getattr(self.metric, "program_settings", None)
        program = MemoryProgram(pick, resources=self.resources or Resources(lm=self.lm),
                                **(settings() if settings is not None else {}),
                                config=getattr(self.metric, "kwargs", {}).get("config"))  # e.g. a memory budget
        record = getattr(self.metric, "evaluation_record", None)
        objective = (test_result.metadata.get("objective") if test_result is not None else None) \
            or (best.result.metadata.get("objective") if best is not None else None)
        if record is not None and objective:
            scores = {"search": best.objective if best is not None else None, "validation": validation,
                      "test": None if test_result is None or test_result.failed else test_result.objective}
            program.evaluation = record(objective=objective, scores={
                split: v if v is not None and math.isfinite(v) else None for split, v in scores.items()})
            if program.evaluation.top_k != program.top_k:  # the pick's retrieve.top_k knob: what its trials read
                program.evaluation = dataclasses.replace(program.evaluation, top_k=program.top_k)
        return program

"""`MemarchOptimizer`: the search as a DSPy-style optimizer — ``compile(student, trainset=...,
valset=...)`` searches on the train data, picks the architecture on validation, reports it on test
and returns (and saves) a new `MemoryProgram`; the student is never mutated."""
from __future__ import annotations

import dataclasses
import logging
import math
from pathlib import Path
from typing import Any, Callable

import optuna

from memarch.errors import MemarchError
from memarch.optimizers.compile.report import CompileReport
from memarch.optimizers.compile.run import CompileRun
from memarch.optimizers.evaluators.base import Evaluator, EvaluatorFunction, as_evaluator
from memarch.optimizers.pruners import make_pruner
from memarch.optimizers.runoff import choose_on_validation
from memarch.optimizers.samplers.strategies import make_sampler
from memarch.optimizers.search.history import History
from memarch.optimizers.search.param_space import ParamSpace
from memarch.optimizers.search.runner import Search
from memarch.optimizers.search.settings import SearchSettings
from memarch.optimizers.search.study import make_storage, open_study
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.presets import warm_start_architectures
from memarch.pipeline.space import ArchitectureSpace

logger = logging.getLogger(__name__)


class MemarchOptimizer:
    """Search the memory-architecture space of a family for the best architecture an evaluator scores.

    Example::

        evaluator = BenchmarkEvaluator("generated")
        optimizer = MemarchOptimizer(evaluator, SearchSettings(strategy="guided", budget=30))
        program = optimizer.compile("conversation", trainset="search", valset="validation")
        optimizer.report.test_score, program.architecture
        MemarchOptimizer(evaluator, strategy="tpe", budget=20)   # settings by name work too

    Args:
        evaluator: an `Evaluator` (``evaluator(architecture_or_None, data) -> TrialResult``, e.g.
            `BenchmarkEvaluator`), or a plain function of that shape.
        settings: how the search runs (`SearchSettings`: strategy, budget, seed, study, warm
            start, finalists, objectives, selection, space, pruner, prompts, MLflow model);
            ``setting_changes`` are changes to it by name (``strategy="tpe"``, ``budget=20``).
        lm: the task LM (None: the LM-free space, modules that need an LM drop out).
        meta_lm: the proposer/diagnoser LM of the guided strategy (default: ``lm``).
        tracker: a `Tracker` (MLflow) or None.
        save_path: where the compiled program is saved as JSON (None: not saved).
        resources: what the returned program is built with (default: bundled embedder, ``lm``).
        on_trial: called with (trial number, architecture, result) after each evaluation.
    """

    def __init__(self, evaluator: Evaluator | EvaluatorFunction | None = None, settings: SearchSettings | None = None, *,
                 lm: Any = None, meta_lm: Any = None, tracker: Any = None, save_path: str | Path | None = None,
                 resources: Any = None, on_trial: Callable | None = None, **setting_changes: Any):
        if evaluator is None:
            raise TypeError("MemarchOptimizer() needs an evaluator")
        if settings is not None and not isinstance(settings, SearchSettings):
            raise TypeError(f"MemarchOptimizer(evaluator, settings): settings is a SearchSettings, not "
                            f"{type(settings).__name__} (give strategy=..., budget=... by name)")
        self.settings = SearchSettings.of(settings, **setting_changes)
        self.evaluator = as_evaluator(evaluator)
        self.lm, self.meta_lm = lm, meta_lm
        self.tracker = tracker
        self.save_path = save_path
        self.resources = resources
        self.on_trial = on_trial
        if self.settings.register and tracker is None:
            raise MemarchError("register needs MLflow tracking (a tracker): the registry is MLflow's")
        self.report: CompileReport | None = None
        self.study: optuna.Study | None = None

    def compile(self, student: Any, *, trainset: Any = "search", valset: Any = "validation",
                testset: Any = "test") -> Any:
        """Search on ``trainset``, choose on ``valset``, report on ``testset``; returns a new program."""
        run = CompileRun(self.settings)
        space, start = self._space(student)
        prefetch = (self.evaluator.prefetch([trainset, valset, testset], encoders=space.encoders)
                    if self.settings.prefetch else None)
        try:
            return self._compile(space, start, run, trainset, valset, testset)
        finally:
            if prefetch is not None:
                prefetch.stop()

    def _compile(self, space: ArchitectureSpace, start: Architecture | None, run: CompileRun, trainset: Any,
                 valset: Any, testset: Any) -> Any:
        s = self.settings
        param_space = self.param_space(space)
        run.sampler = make_sampler(s.strategy, param_space, seed=s.seed, k=s.k, lm=self.lm, meta_lm=self.meta_lm,
                                   no_memory=lambda: self.evaluator(None, trainset))  # only `archive` asks for it
        run.study = s.default_study_name(space.family)
        warm = self._warm_start(space, start)
        run.warm_start = [a.key() for a, _ in warm]
        self.study = study = self._open_study(run.study, run.sampler, param_space, warm)
        run.search, run.history = self._search(study, param_space, space, trainset, warm)
        run.pick, run.finalists = choose_on_validation(run.history, self.evaluator, valset, s.finalists,
                                                       objectives=s.objectives, selection=s.selection,
                                                       details=run.validation)
        validation = run.finalists[run.pick.key()]
        run.test_result = self._test(run.study, run.pick, testset)
        program = self._program(run.pick, run.history.by_key(run.pick.key()), validation, run.test_result)
        run.prompts = self._prompts(program, validation, trainset, valset, testset)
        run.program_path = str(program.save(self.save_path, include_memory=False)) if self.save_path else None
        self.report = CompileReport.from_run(run)
        if self.tracker is not None:
            self._track(program, run.study)
        logger.info("compiled %s: search %.4f validation %.4f test %s", run.pick.key(), self.report.search_score,
                    self.report.validation_score, self.report.test_score)
        return program

    def _space(self, student: Any) -> tuple[ArchitectureSpace, Architecture | None]:
        """The space searched (the evaluator's: its opt-in modules too, as the CLI's, less the
        settings' ``exclude``) and the student's architecture, when it has one."""
        from memarch.pipeline.program import MemoryProgram

        def space(family: str | None) -> ArchitectureSpace:
            return self.evaluator.architecture_space(family or "experience", lm_available=self.lm is not None,
                                                     exclude=self.settings.exclude)

        if isinstance(student, ArchitectureSpace):
            return student.without(self.settings.exclude), None
        if isinstance(student, MemoryProgram):
            return space(student.family), student.architecture
        if isinstance(student, Architecture):
            return space(student.family), student
        if isinstance(student, str):
            return space(student), None
        raise MemarchError(f"compile() takes a family name, an ArchitectureSpace or a MemoryProgram, "
                           f"not {type(student).__name__}")

    def _open_study(self, name: str, sampler: Any, param_space: ParamSpace,
                    warm: list[tuple[Architecture, str]]) -> optuna.Study:
        """The study (new, or resumed), with round 0 queued when it has no trials yet."""
        s = self.settings
        study = open_study(name, make_storage(s.storage), sampler, space=param_space.describe(), resume=s.resume,
                           attrs={"strategy": s.strategy, "seed": s.seed}, objectives=s.objectives,
                           pruner=make_pruner(s.pruner))
        if not study.trials:
            for arch, role in warm:
                study.enqueue_trial(param_space.to_params(arch), user_attrs={"role": role})
        return study

    def _search(self, study: optuna.Study, param_space: ParamSpace, space: ArchitectureSpace, trainset: Any,
                warm: list[tuple[Architecture, str]]) -> tuple[Search, History]:
        """Run the study to its budget on ``trainset``; the search and its distinct history."""
        s = self.settings
        if self.tracker is not None:
            self.tracker.start(study, evaluator=self.evaluator, strategy=s.strategy, seed=s.seed, budget=s.budget,
                               family=space.family, warm_start=",".join(a.key() for a, _ in warm) or "none")
        search = Search(self.evaluator, param_space, s, data=trainset, tracker=self.tracker, on_trial=self.on_trial)
        history = search.run(study)
        if not history.records:
            raise MemarchError(f"study {study.study_name}: no architecture could be evaluated (see the log)")
        return search, history

    def _test(self, name: str, pick: Architecture, testset: Any) -> Any:
        """The pick's test result (None: no test split); a failed one is logged, and counted later."""
        if testset is None:
            return None
        result = self.evaluator(pick, testset)
        if result.failed:  # None and counted, never a 0.0 score
            logger.warning("study %s: the test evaluation of the pick %s failed: %s", name, pick.key(), result.error)
        return result

    def _track(self, program: Any, name: str) -> None:
        """The compile's end in MLflow: the program as a model (when asked), the curve, the summary."""
        import tempfile

        from memarch.optimizers.search.curves import plot_curves

        if self.settings.log_model or self.settings.register:
            self._log_model(program)
        tmp = Path(tempfile.mkdtemp(prefix="memarch-curve-")) / "curve.png"
        plot_curves({self.settings.strategy: [self.report.curve]}, tmp, title=f"{name}: best-so-far search score")
        self.tracker.finish(self.report.tracked_summary(), curve_png=tmp)

    def _prompts(self, program: Any, validation: float, trainset: Any, valset: Any, testset: Any) -> Any:
        """Stage two (`optimize_prompts`) on the compiled program, or None when not asked for; the
        program's evaluation record then holds the scores of the prompts it keeps."""
        s = self.settings
        if s.prompt_optimizer == "none":
            return None
        from memarch.optimizers.prompts.optimize import optimize_prompts

        if not all(isinstance(x, str) for x in (trainset, valset)) or not isinstance(testset, (str, type(None))):
            raise MemarchError("prompt optimisation needs named splits (trainset, valset, testset)")
        report = optimize_prompts(program, self.evaluator, s.prompts, lm=self.lm, meta_lm=self.meta_lm,
                                  trainset=trainset, valset=valset, testset=testset, tracker=self.tracker,
                                  validation_before=validation)
        logger.info("%s", report.line())
        if report.kept == "optimised" and program.evaluation is not None:
            scores = {**program.evaluation.scores, "validation": report.validation_after,
                      "test": report.test_after}
            program.evaluation = dataclasses.replace(program.evaluation, scores=scores)
        return report

    def _log_model(self, program: Any) -> None:
        """The program as the parent run's MLflow model. A failure is shown (a warning and
        ``extras["model_error"]``) and the compile goes on — unless a registration was asked for."""
        register = self.settings.register
        try:
            info = self.tracker.log_program(program, registered_name=register)
        except Exception as exc:
            message = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            if register:
                raise MemarchError(f"cannot log and register the program as MLflow model {register!r}: "
                                   f"{message}") from None
            logger.warning("the compiled program was not logged as an MLflow model: %s", message)
            self.report.extras["model_error"] = message
            return
        self.report.extras["model_uri"] = info.model_uri
        if info.registered_model_version is not None:
            self.report.extras["registered_model"] = f"models:/{register}/{info.registered_model_version}"

    def param_space(self, space: ArchitectureSpace) -> ParamSpace:
        """The Optuna view of ``space`` in this optimizer's mode; in the full space ``top_k``
        defaults to what the evaluator reads with, so a preset queued there is the preset."""
        settings = self.evaluator.program_settings()
        defaults = {"retrieve.top_k": settings["top_k"]} \
            if self.settings.space_mode == "full" and "top_k" in settings else {}
        return ParamSpace(space, self.settings.space_mode, defaults=defaults)

    def _warm_start(self, space: ArchitectureSpace, start: Architecture | None) -> list[tuple[Architecture, str]]:
        """Round 0: the student's architecture first, then the warm start (same for every strategy)."""
        s = self.settings
        out: list[tuple[Architecture, str]] = []
        if start is not None:
            out.append((space.validate(start).canonical(), "student"))
        if isinstance(s.warm_start, str):
            warm = warm_start_architectures(space, s.seed, s.k) if s.warm_start == "presets" else []
        else:
            warm = [space.validate(a).canonical() for a in s.warm_start]
        keys = {a.key() for a, _ in out}
        for a in warm:
            if a.key() not in keys:
                out.append((a, "warm_start"))
                keys.add(a.key())
        return out[:s.budget]

    def _program(self, pick: Architecture, best: Any, validation: float, test_result: Any) -> Any:
        """The pick as a program with the top_k, context budget and config its trials read with,
        and the record of how it was scored (when the evaluator can say)."""
        from memarch.pipeline.program import MemoryProgram
        from memarch.pipeline.resources import Resources

        program = MemoryProgram(pick, resources=self.resources or Resources(lm=self.lm),
                                **self.evaluator.program_settings())
        metric = (test_result.metadata.get("metric") if test_result is not None else None) \
            or (best.result.metadata.get("metric") if best is not None else None)
        if not metric:
            return program
        scores = {"search": best.score if best is not None else None, "validation": validation,
                  "test": None if test_result is None or test_result.failed else test_result.score}
        record = self.evaluator.evaluation_record(
            {split: v if v is not None and math.isfinite(v) else None for split, v in scores.items()}, metric)
        if record is not None:
            if record.top_k != program.top_k:  # the pick's retrieve.top_k knob: what its trials read
                record = dataclasses.replace(record, top_k=program.top_k)
            program.evaluation = record
        return program

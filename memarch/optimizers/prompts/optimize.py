"""Stage two of compile: with the architecture fixed, optimise the prompts of the program's LM
predictors (LM encoders, store, retriever and manager signatures, the reader) with a DSPy optimizer
— BootstrapFewShot, MIPROv2 or GEPA — on the search split; validation before and after (the
optimised prompts are kept only if validation does not drop), test after; each step a nested
MLflow run."""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import dspy

from memarch.errors import MemarchError
from memarch.optimizers.prompts.metric import PromptMetric
from memarch.optimizers.prompts.runs import PromptRuns
from memarch.optimizers.search.settings import PromptSettings
from memarch.optimizers.prompts.student import (
    READER,
    PromptStudent,
    StudentRuntime,
    optimisable,
    program_predictors,
    prompt_name,
)
from memarch.pipeline.program import MemoryProgram
from memarch.pipeline.prompt_state import apply_prompt, prompt_of

if TYPE_CHECKING:
    from memarch.optimizers.evaluators.base import Evaluator

log = logging.getLogger(__name__)

NOTHING = "nothing to optimise"


@dataclass
class PromptReport:
    """What prompt optimisation did: scores before and after, which prompts changed, what it cost."""

    optimizer: str
    predictors: list[str] = field(default_factory=list)  # the optimisable predictors, "<role>.<name>"
    validation_before: float | None = None
    validation_after: float | None = None
    test_after: float | None = None
    kept: str = NOTHING  # "optimised", "original" (validation dropped or the optimizer failed) or NOTHING
    changed: list[str] = field(default_factory=list)  # predictors whose instructions or demos changed
    counts: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    wall_s: float = 0.0

    def line(self) -> str:
        """One line for the CLI."""
        if self.kept == NOTHING:
            return (f"prompt optimisation ({self.optimizer}): {NOTHING} — the chosen program has no LM "
                    f"predictors (no LM: every module runs LM-free and there is no LM reader); "
                    f"counted as prompts_skipped=1")
        fmt = lambda v: "n/a" if v is None else f"{v:.4f}"  # noqa: E731
        head = (f"prompt optimisation ({self.optimizer}, {len(self.predictors)} predictors: "
                f"{', '.join(self.predictors)}): validation {fmt(self.validation_before)} -> "
                f"{fmt(self.validation_after)}, test after {fmt(self.test_after)}; ")
        if self.error:
            return head + f"optimizer failed ({self.error}); original prompts kept"
        if self.kept == "original":
            return head + "validation dropped: original prompts kept"
        return head + (f"kept; changed: {', '.join(self.changed)}" if self.changed else "kept; no prompt changed")

    def to_dict(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer, "predictors": self.predictors, "kept": self.kept,
                "validation_before": self.validation_before, "validation_after": self.validation_after,
                "test_after": self.test_after, "changed": self.changed, "counts": self.counts,
                "error": self.error, "wall_s": round(self.wall_s, 2), "summary": self.line()}


def check_benchmark(benchmark: Any) -> None:
    """Prompt optimisation replays the question stream of a conversation benchmark."""
    from memarch.benchmarks.base import STREAM

    if benchmark.protocol != STREAM:
        raise MemarchError(f"--optimize-prompts works on conversation benchmarks; {benchmark.name} is an agent "
                           f"benchmark (its episodes are not replayed per question)")


def optimize_prompts(program: MemoryProgram, evaluator: "Evaluator", settings: PromptSettings | str, *,
                     lm: Any = None, meta_lm: Any = None, trainset: str = "search", valset: str = "validation",
                     testset: str | None = "test", tracker: Any = None, validation_before: float | None = None,
                     **setting_changes: Any) -> PromptReport:
    """Optimise ``program``'s prompts in place (kept only if validation does not drop).

    Example::

        report = optimize_prompts(program, evaluator, PromptSettings("gepa", examples=10), lm=lm)
        optimize_prompts(program, evaluator, "bootstrap", lm=lm, examples=6)   # the optimizer's name, by name
        report.validation_before, report.validation_after, program.save("p.json")

    Args:
        program: the compiled program; its prompts (and ``reader_prompts``) are the start.
        evaluator: the `BenchmarkEvaluator` (or a wrapper of one) the architecture was chosen
            with; its benchmark, limit and settings (reader, judge, metric) score the prompts.
        settings: the `PromptSettings` (optimizer, examples per split, budget, seed; compile's:
            ``SearchSettings.prompts``), or an optimizer's name; ``setting_changes`` change it by
            name (``examples=``, ``budget=``, ``seed=``).
        lm: the task LM (the DSPy default inside the optimizer); meta_lm: MIPRO's proposer and GEPA's
            reflection LM (default ``lm``).
        trainset, valset, testset: the named splits it learns on, keeps or drops on, and reports
            on (None: no test).
        validation_before: the program's validation score when already measured (compile's).
    """
    if isinstance(settings, str):
        settings = PromptSettings(settings)
    settings = PromptSettings.of(settings, **setting_changes)
    optimizer, examples, budget = settings.optimizer, settings.examples, settings.budget
    started = time.perf_counter()
    report = PromptReport(optimizer)
    if optimizer == "none":
        return report
    if examples < 1 or budget < 1:
        raise MemarchError(f"prompt optimisation needs at least 1 example and a budget of 1 "
                           f"(got {examples}, {budget})")
    reader = _reader(evaluator, program)
    lm = lm or program.resources.lm or (reader.resources.lm if reader is not None else None)
    report.predictors = [name for name, _ in optimisable(program, reader)]
    runs = PromptRuns(tracker, optimizer)
    if not report.predictors:
        report.counts = {"prompts_skipped": 1}
        runs.skipped(report)
        return report
    check_benchmark(evaluator.benchmark)
    runtime = StudentRuntime(program, evaluator, [trainset, valset], reader)
    train, val = runtime.examples(trainset, examples), runtime.examples(valset, examples)
    if not train:
        raise MemarchError(f"prompt optimisation: the {trainset} split has no question to learn from")
    runs.begin(report)
    if validation_before is None:
        validation_before = score(program, evaluator, valset)
    report.validation_before = validation_before
    runs.step("validation before", {"validation_score": validation_before})
    prompts = _optimised_prompts(report, runtime, train, val, settings, lm=lm, meta_lm=meta_lm, runs=runs)
    candidate = with_prompts(program, prompts)
    report.validation_after = score(candidate, evaluator, valset) if prompts else validation_before
    runs.step("validation after", {"validation_score": report.validation_after})
    if not report.error and report.validation_after >= validation_before:
        report.kept = "optimised"
        install(program, prompts)
    else:  # validation dropped (or the optimizer failed): the program keeps its prompts
        report.kept = "original"
    if testset is not None:
        report.test_after = score(program, evaluator, testset)
        runs.step("test after", {"test_score": report.test_after})
    report.wall_s = time.perf_counter() - started
    runs.end(report)
    return report


def _optimised_prompts(report: PromptReport, runtime: StudentRuntime, train: list, val: list,
                       settings: PromptSettings, *, lm: Any, meta_lm: Any, runs: PromptRuns) -> dict[str, Any]:
    """The DSPy optimizer run over the student: the prompts it ends with ({} when it failed: said in
    ``report.error``), its counts and the predictors it changed, recorded in ``report``."""
    optimizer, budget = settings.optimizer, settings.budget
    scorer = PromptMetric(feedback=optimizer == "gepa")
    student = PromptStudent(runtime)
    start = {prompt_name(n): prompt_of(p) for n, p in student.named_predictors()}
    t0 = time.perf_counter()
    try:
        with dspy.context(lm=lm):
            compiled = _teleprompter(settings, scorer, runtime, lm, meta_lm) \
                .compile(student, trainset=train, **_compile_kwargs(optimizer, val, budget))
    except Exception as exc:  # an optimizer's failure leaves the program as it was, said in one line
        log.warning("prompt optimisation (%s) failed: %s", optimizer, exc)
        log.debug("prompt optimisation failure", exc_info=True)
        report.error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
        compiled = None
    report.counts = {"metric_calls": scorer.calls, "program_calls": runtime.forwards,
                     "memories_written": runtime.memories_written, "train_examples": len(train),
                     "val_examples": len(val), "optimizer_failed": int(compiled is None)}
    prompts = {prompt_name(n): prompt_of(p) for n, p in compiled.named_predictors()} if compiled else {}
    report.changed = [n for n in report.predictors if n in prompts and prompts[n] != start.get(n)]
    runs.step(f"optimise ({optimizer})", {**report.counts, "changed_predictors": len(report.changed),
                                          "wall_s": time.perf_counter() - t0}, artifact={"prompts": prompts})
    return prompts


def _reader(evaluator: "Evaluator", program: MemoryProgram) -> Any:
    """A reader of its own, on the evaluator's reader's LM (the evaluator's is left alone), with the
    program's saved reader prompt."""
    given = evaluator.settings.reader if evaluator.settings is not None else None
    if given is None:
        return None
    from memarch.benchmarks.evaluation.reader import MemoryReader

    reader = MemoryReader(getattr(given, "resources", None) or program.resources)
    if program.reader_prompts and "answer" in program.reader_prompts:
        apply_prompt(reader.answer, program.reader_prompts["answer"])
    return reader


def _teleprompter(settings: PromptSettings, metric: PromptMetric, runtime: StudentRuntime, lm: Any,
                  meta_lm: Any) -> Any:
    """The DSPy optimizer, sized for ``settings.budget`` (one thread: the runtime's memories are shared)."""
    optimizer, budget, seed = settings.optimizer, settings.budget, settings.seed
    if optimizer == "bootstrap":
        # Labeled demos would put a question/answer example into every predictor, encoders included:
        # only demos bootstrapped from each predictor's own successful calls.
        return dspy.BootstrapFewShot(metric=metric, metric_threshold=runtime.threshold,
                                     max_bootstrapped_demos=4, max_labeled_demos=0, max_rounds=1)
    if optimizer == "mipro":
        return dspy.MIPROv2(metric=metric, prompt_model=meta_lm or lm, task_model=lm, auto=None,
                            num_candidates=3, max_bootstrapped_demos=2, max_labeled_demos=0, num_threads=1,
                            seed=seed, verbose=False, track_stats=False, metric_threshold=runtime.threshold)
    return dspy.GEPA(metric=metric, max_metric_calls=budget, reflection_lm=meta_lm or lm,
                     reflection_minibatch_size=3, num_threads=1, seed=seed, use_merge=False,
                     track_stats=False, warn_on_score_mismatch=False)


def _compile_kwargs(optimizer: str, val: list, budget: int) -> dict[str, Any]:
    if optimizer == "mipro":
        return {"valset": val, "num_trials": max(1, budget // max(1, len(val))), "minibatch": False,
                "program_aware_proposer": False, "data_aware_proposer": False}
    if optimizer == "gepa":
        return {"valset": val}
    return {}


def install(program: MemoryProgram, prompts: dict[str, dict[str, Any]]) -> None:
    """Put optimised prompts (``"<role>.<predictor>" -> prompt_of``) on ``program``; the reader's
    go to ``program.reader_prompts`` (saved with the program)."""
    targets = dict(program_predictors(program))
    for name, prompt in prompts.items():
        if name == READER:
            program.reader_prompts = {"answer": prompt}
        elif name in targets:
            apply_prompt(targets[name], prompt)
        else:
            raise MemarchError(f"optimised prompt for {name}: the program has no such predictor")


def with_prompts(program: MemoryProgram, prompts: dict[str, dict[str, Any]]) -> MemoryProgram:
    """A fresh copy of ``program`` (no memory) with ``prompts`` installed."""
    copy = MemoryProgram.from_dict(program.to_dict(include_memory=False), resources=program.resources)
    copy.evaluation = program.evaluation
    install(copy, prompts)
    return copy


def score(program: MemoryProgram, evaluator: "Evaluator", split: str) -> float:
    """``program`` (fresh memory, its prompts and reader prompt) on ``split``, as the evaluator
    scores an architecture; a failed evaluation is an error, not a score."""
    from memarch.benchmarks.evaluation.evaluate import evaluate
    from memarch.benchmarks.evaluation.settings import EvaluationSettings

    fresh = with_prompts(program, {})
    settings = evaluator.settings or EvaluationSettings()
    if settings.reader is not None:
        settings = settings.replace(reader=_reader(evaluator, fresh))
    result = evaluate(fresh, evaluator.benchmark, split=split, settings=settings, resources=program.resources,
                      limit=evaluator.limit)
    if result.failed:
        raise MemarchError(f"prompt optimisation: scoring the program on {split} failed: {result.error}")
    return float(result.score)

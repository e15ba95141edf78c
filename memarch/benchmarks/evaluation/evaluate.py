"""`evaluate`: one architecture (or the no-memory baseline) on one benchmark split -> a `TrialResult`
with the score, named scores, per-category scores, cost, per-query outcomes and failure attribution.
A trial that raises is returned as ``failed=True``; the study goes on."""
from __future__ import annotations

import logging
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable

from memarch.benchmarks.base import Benchmark, resolve_benchmark
from memarch.benchmarks.evaluation.costs import lm_tokens, memory_costs
from memarch.benchmarks.evaluation.fallbacks import read_counters, trial_delta
from memarch.benchmarks.evaluation.runs import check_on_instance, protocol_of
from memarch.benchmarks.evaluation.settings import EvaluationSettings
from memarch.benchmarks.metrics.registry import check_metric, default_metric
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.embed_ahead import AheadProgress
from memarch.pipeline.program import MemoryProgram
from memarch.pipeline.resources import Resources
from memarch.pipeline.trial import TrialResult

log = logging.getLogger(__name__)

OnInstance = Callable[[int, int, list[float]], bool]


def evaluate(architecture_or_program: Architecture | MemoryProgram | dict | None, benchmark: Benchmark | str, *,
             split: str = "search", settings: EvaluationSettings | None = None, resources: Resources | None = None,
             limit: int | None = None, accounting: Any = None, on_instance: OnInstance | None = None,
             on_embed_progress: Callable[[AheadProgress], None] | None = None,
             **setting_changes: Any) -> TrialResult:
    """Evaluate one architecture on one split of a benchmark.

    Example::

        arch = Architecture(("turn",), "vector", "hybrid", "lightweight")
        result = evaluate(arch, get_benchmark("generated"), split="search")
        result.score, result.per_category, result.attribution
        evaluate(arch, bench, split="test", settings=EvaluationSettings(metric="evidence_recall"))

    Args:
        architecture_or_program: an `Architecture` or its dict (a fresh `MemoryProgram` is built
            for the trial; a malformed dict raises `ArchitectureError`), a built program (used as
            is), or None for the no-memory baseline.
        benchmark: a `Benchmark`, or a name for :func:`memarch.benchmarks.get_benchmark`.
        split: ``search`` / ``validation`` / ``test`` (disjoint) or ``all``.
        settings: how to read and score (`EvaluationSettings`: context budget, top_k, metric,
            reader, judge, success threshold, program config); ``setting_changes`` are changes to
            it by name (``context_budget=100``, ``metric="qa_f1"``, ``reader=...``). An LM metric
            without a reader raises ValueError up front; agent benchmarks always use their task score.
        limit: the first N questions (or tasks) of the split.
        accounting: the LM accounting whose delta the cost reports (default: the LM roles').
        on_instance: for a benchmark that declares ``scores_per_instance`` (conversations),
            called after each dialogue of the split (in stream order) with (dialogues done,
            dialogues in the split, that dialogue's question scores); returning True stops the
            evaluation there: the result holds the outcomes so far and ``metadata["instances"]``
            says how many dialogues it saw (a pruned trial). Given for another benchmark (agent
            tasks, scored as one), it raises `MemarchError`.
        on_embed_progress: called with an `AheadProgress` (texts embedded, to embed, share, ETA)
            about every 10 s while the texts the run will embed are embedded ahead of it
            (`memarch.pipeline.embed_ahead`: an evaluation without ``on_instance`` whose texts the
            embedding cache lacks; the result's ``cost["embed_ahead_s"]`` says how long it took).
    """
    settings = EvaluationSettings.of(settings, **setting_changes)
    # A bad metric name is the caller's error, not a failed trial. None stays None until the
    # benchmark is known (its ``lm_free_metric`` may be the default).
    check_metric(settings.metric, settings.reader, settings.judge)
    settings = settings.replace(top_k=settings.read_top_k)
    if on_instance is not None:  # a pruner that would never be asked is the caller's error
        benchmark = resolve_benchmark(benchmark)
        check_on_instance(benchmark, on_instance)
    resources = resources or Resources()
    trial = _Trial(architecture_or_program, benchmark, split, resources, settings, accounting)
    trial.on_progress = on_embed_progress
    try:
        result = trial.run(limit, on_instance)
    except Exception as exc:  # a trial fails, not the study
        result = trial.failed(exc)
    return trial.finish(result)


@dataclass
class _Trial:
    """One evaluation's steps and what it measures before and after (LM tokens, embeddings)."""

    architecture_or_program: Any
    benchmark: Benchmark | str
    split: str
    resources: Resources
    settings: EvaluationSettings
    accounting: Any = None

    def __post_init__(self) -> None:
        given = self.architecture_or_program
        if isinstance(given, dict):  # read up front: a failed trial still names its architecture
            given = self.architecture_or_program = Architecture.from_dict(given)
        self.arch = given.architecture if isinstance(given, MemoryProgram) else given
        self.bench_name = self.benchmark if isinstance(self.benchmark, str) else self.benchmark.name
        self.acct = self.accounting if self.accounting is not None else \
            getattr(self.resources.extra.get("lm_roles"), "accounting", None)
        self.before = self.acct.snapshot() if self.acct is not None else None
        self.embedded = (getattr(self.resources.embedder, "computed", 0), getattr(self.resources.embedder, "requested", 0))
        self.started = time.perf_counter()
        self.lm_users = [("reader", self.settings.reader), ("judge", self.settings.judge)]
        self.program: MemoryProgram | None = None
        self.counted: Any = None
        self.ahead: Any = None  # what `embed_ahead` did before the stream (an `AheadReport`)
        self.on_progress: Callable[[AheadProgress], None] | None = None

    def run(self, limit: int | None, on_instance: OnInstance | None) -> TrialResult:
        """Build the program, run the benchmark's protocol on the split, add the memory's costs."""
        self.benchmark = resolve_benchmark(self.benchmark)
        named = self.settings.metric
        self.settings = self.settings.replace(metric=self.settings.metric_name(self.benchmark))
        view = self.benchmark.split(self.split).limit(limit)
        self.program = program = build_program(self.architecture_or_program, self.resources, self.settings)
        self.arch = program.architecture if program is not None else self.arch
        if program is not None and "retrieve.top_k" in program.architecture.param_dict:
            self.settings = self.settings.replace(top_k=program.top_k)  # the architecture's knob, not the default
        self.counted = read_counters(program, self.lm_users)  # a program passed in may have counted before
        if view.metric is not None and named is not None:
            log.warning("metric %s ignored: %s is always scored by its %s", named, self.bench_name, view.metric)
        if program is not None and on_instance is None:  # a pruned trial may stop early: it embeds as it goes
            self.ahead = _embed_ahead(program, view, self.on_progress)
        result = protocol_of(view).run(program, view, self.settings, on_instance=on_instance)
        result.architecture = self.arch
        result.split = self.split
        result.metadata["knobs"] = dict(self.benchmark.knobs)  # e.g. LongMemEval's variant
        if program is not None:
            _add_memory_costs(result, program)
        return result

    def failed(self, exc: Exception) -> TrialResult:
        from memarch.lm.roles import as_unavailable

        exc = as_unavailable(exc) or exc  # a dead endpoint in any LM path: one LMUnavailableError line
        log.warning("trial %s on %s failed: %s", self.arch, self.bench_name, exc)
        fixed = None if isinstance(self.benchmark, str) else self.benchmark.metric  # str: never resolved
        named = fixed or self.settings.metric or default_metric(self.settings.reader)
        return TrialResult(architecture=self.arch, benchmark=self.bench_name, split=self.split, score=0.0,
                           failed=True, error=f"{exc.__class__.__name__}: {exc}",
                           metadata={"traceback": traceback.format_exc(limit=8), "metric": named})

    def finish(self, result: TrialResult) -> TrialResult:
        """The measurements every result carries, failed or not: LM fallbacks, wall time,
        embeddings, LM tokens, the context budget and top_k read with."""
        if self.counted is not None:
            _add_fallbacks(result, *trial_delta(read_counters(self.program, self.lm_users), self.counted))
        embedder = self.resources.embedder
        result.cost["wall_s"] = round(time.perf_counter() - self.started, 4)
        result.cost["embeddings_computed"] = float(getattr(embedder, "computed", 0) - self.embedded[0])
        result.cost["embeddings_requested"] = float(getattr(embedder, "requested", 0) - self.embedded[1])
        if self.acct is not None:
            result.cost.update(self.acct.delta(self.before).to_metrics())
        result.cost["lm_tokens"] = lm_tokens(result.cost)
        if self.ahead is not None and self.ahead.workers:  # texts embedded before the stream, by other processes
            result.cost.update(embed_ahead_s=round(self.ahead.seconds, 4), embed_ahead_computed=float(self.ahead.computed),
                               embed_ahead_missing=float(self.ahead.missing))
        result.metadata.setdefault("context_budget", self.settings.context_budget)
        result.metadata.setdefault("top_k", self.settings.read_top_k)
        return result


def build_program(arch_or_program: Any, resources: Resources, settings: EvaluationSettings) -> MemoryProgram | None:
    """The program a trial evaluates: the given one as is, or a fresh one built from an architecture
    or its dict (None: the no-memory agent)."""
    if arch_or_program is None:
        return None
    if isinstance(arch_or_program, MemoryProgram):
        return arch_or_program
    arch = arch_or_program if isinstance(arch_or_program, Architecture) else Architecture.from_dict(arch_or_program)
    return MemoryProgram(arch, resources=resources, top_k=settings.read_top_k, context_budget=settings.context_budget,
                         config=settings.config)


def _add_memory_costs(result: TrialResult, program: MemoryProgram) -> None:
    memory, per_ns = memory_costs(program.store)
    result.cost.update(memory)
    result.metadata["memory_per_namespace"] = per_ns
    if program.manager.memory_budget is not None:  # what keeping it cost, counted
        result.metadata["memory_budget"] = {"words": program.manager.memory_budget, **program.manager.budget_stats}


def _add_fallbacks(result: TrialResult, requests: dict[str, int], fallbacks: dict[str, int]) -> None:
    """The modules' LM counts over the trial, added to what the run itself reported (the DSPy agent
    of a task benchmark lives per episode and reports through the episodes)."""
    for role, n in requests.items():
        result.lm_requests[role] = result.lm_requests.get(role, 0) + n
        result.fallbacks[role] = result.fallbacks.get(role, 0) + fallbacks.get(role, 0)


def _embed_ahead(program: MemoryProgram, view: Benchmark, on_progress: Callable[[AheadProgress], None] | None) -> Any:
    """Every text the run will embed that the cache lacks, embedded first on every core (none when
    the program embeds nothing, or its embedder is fast or has no disk cache)."""
    from memarch.pipeline.embed_ahead import embed_ahead
    from memarch.pipeline.prefetch import FAST
    from memarch.pipeline.registry import REGISTRY

    arch = program.architecture
    embeds = any(REGISTRY.get(role, name).needs_embeddings for role, name in
                 (("store", arch.store), ("retriever", arch.retrieve), ("manager", arch.manage)))
    embedder = program.resources.embedder
    if not embeds or embedder.model in FAST or embedder.cache is None:
        return None
    from memarch.benchmarks.evaluation.texts_ahead import program_fingerprint, program_texts
    from memarch.pipeline.embed_ahead import AheadReport, known, mark_known

    # Listing the texts decodes every session's items (a sixth of a warm LongMemEval_S evaluate):
    # skipped when an earlier run of the same texts left every one of them in the cache.
    fingerprint = program_fingerprint(program, view)
    if known(embedder, fingerprint):
        return AheadReport(known=True)
    report = embed_ahead(embedder, program_texts(program, view), on_progress=on_progress)
    if report.missing == 0 and not report.failed_workers:
        mark_known(embedder, fingerprint)
    return report

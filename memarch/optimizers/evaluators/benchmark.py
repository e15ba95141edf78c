"""`BenchmarkEvaluator`: an `Evaluator` that scores an architecture on a benchmark split through
`memarch.benchmarks.evaluation.evaluate`, with the settings every trial reads with."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memarch.benchmarks.evaluation.settings import EvaluationSettings
from memarch.optimizers.evaluators.base import Evaluator
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.trial import TrialResult

if TYPE_CHECKING:
    from memarch.benchmarks.base import Benchmark
    from memarch.optimizers.pruners.instances import OnInstance
    from memarch.pipeline.evaluation_record import EvaluationRecord


class BenchmarkEvaluator(Evaluator):
    """Score an architecture (None: the no-memory agent) on a split of a benchmark.

    Example::

        evaluator = BenchmarkEvaluator("generated", resources=Resources())
        evaluator(Architecture(("turn",), "vector", "hybrid", "lightweight"), "search").score

    Args:
        benchmark: a `Benchmark` or a name for ``get_benchmark``.
        resources: embedder, task LM, caches shared by every trial.
        data_path: dataset path for file-backed benchmarks (locomo, babi).
        limit: score only the first N questions of each split (fast runs).
        knobs: benchmark constructor keyword arguments (recorded in a compiled program).
        settings: how every trial reads and scores (`EvaluationSettings`); ``setting_changes``
            are changes to it by name (``context_budget=100``, ``metric="evidence_recall"``,
            ``reader=...``).
        memory_budget: the `MemoryBudget` behind ``settings.config`` (shown, and recorded).
    """

    def __init__(self, benchmark: Any = "generated", *, resources: Any = None, data_path: str | None = None,
                 limit: int | None = None, knobs: dict | None = None, settings: EvaluationSettings | None = None,
                 memory_budget: Any = None, **setting_changes: Any):
        from memarch.benchmarks import get_benchmark
        from memarch.pipeline.resources import Resources

        self._benchmark = get_benchmark(benchmark, data_path, **(knobs or {})) if isinstance(benchmark, str) \
            else benchmark
        self.resources = resources or Resources()
        self._limit = limit
        self.knobs = dict(knobs or {})
        self._settings = EvaluationSettings.of(settings, **setting_changes)
        self._memory_budget = memory_budget

    @property
    def benchmark(self) -> "Benchmark":
        return self._benchmark

    @property
    def limit(self) -> int | None:
        return self._limit

    @property
    def settings(self) -> EvaluationSettings:
        return self._settings

    @property
    def memory_budget(self) -> Any:
        return self._memory_budget

    @property
    def family(self) -> str:
        return self._benchmark.family

    @property
    def metric(self) -> str:
        return self._benchmark.metric or self._settings.metric_name(self._benchmark)

    def program_settings(self) -> dict[str, Any]:
        """``{"top_k", "context_budget"}`` the trials read with, and the program ``config`` they were
        built with when there is one: what a compiled program must carry."""
        out: dict[str, Any] = {"top_k": self._settings.read_top_k, "context_budget": self._settings.context_budget}
        if self._settings.config is not None:
            out["config"] = self._settings.config
        return out

    def evaluation_record(self, scores: dict[str, float | None], metric: str) -> "EvaluationRecord":
        """The `EvaluationRecord` of scores this evaluator reported: benchmark, data, knobs, split."""
        from pathlib import Path

        from memarch.pipeline.evaluation_record import EvaluationRecord, data_sha256

        path = self._benchmark.path
        return EvaluationRecord(
            benchmark=self._benchmark.name, metric=metric, top_k=self._settings.read_top_k,
            context_budget=self._settings.context_budget,
            data=str(Path(path).resolve()) if path is not None else None, data_sha256=data_sha256(path),
            knobs={**self._benchmark.knobs, **self.knobs}, split=self._benchmark.split_rule(),
            limit=self._limit, scores=dict(scores))

    def prefetch(self, data: list[Any], *, encoders: Any = None) -> Any:
        """The questions and LM-free encoders' texts (of ``encoders`` only, when given: the
        searched space's) of ``data``'s splits, worked out and embedded
        by a background process into this evaluator's embedding cache (`memarch.pipeline.prefetch`,
        `prefetch_job`); None for a fast embedder, an embedder without a disk cache, or an agent
        benchmark."""
        from memarch.benchmarks.base import STREAM
        from memarch.pipeline.prefetch import FAST, Prefetch

        embedder = self.resources.embedder
        splits = [d for d in data if isinstance(d, str)]
        if embedder.model in FAST or embedder.cache is None or self._benchmark.protocol != STREAM or not splits:
            return None
        job = {"model": embedder.model, "record": self.evaluation_record({}, self.metric).to_dict(),
               "splits": splits, "limit": self._limit,
               "encoders": None if encoders is None else list(encoders)}
        return Prefetch.start(job, module="memarch.optimizers.evaluators.prefetch_job",
                              cache_dir=embedder.cache.path.parent)

    def supports_instances(self) -> bool:
        """What the benchmark declares (``scores_per_instance``): conversation benchmarks score
        dialogue by dialogue (a pruner can stop a trial between two); agent benchmarks score a
        collection phase, then tasks, as one."""
        return self._benchmark.scores_per_instance

    def __call__(self, architecture: Architecture | None, data: Any = "search", *,
                 on_instance: "OnInstance | None" = None) -> TrialResult:
        from memarch.benchmarks.evaluation.evaluate import evaluate

        return evaluate(architecture, self._benchmark, split=str(data), settings=self._settings,
                        resources=self.resources, limit=self._limit, on_instance=on_instance)

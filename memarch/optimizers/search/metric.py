"""The metric contract of the search — ``metric(architecture_or_None, data) -> TrialResult`` — and
`BenchmarkMetric`, which scores on a benchmark split through `memarch.benchmarks.evaluation.evaluate`."""
from __future__ import annotations

from typing import Any

from memarch.pipeline.architecture import Architecture
from memarch.pipeline.trial import TrialResult


class BenchmarkMetric:
    """Score an architecture (None: the no-memory agent) on a split of a benchmark.

    Example::

        metric = BenchmarkMetric("generated", resources=Resources())
        metric(Architecture(("turn",), "vector", "hybrid", "lightweight"), "search").objective

    Args:
        benchmark: a `Benchmark` or a name for ``get_benchmark``.
        resources: embedder, task LM, caches shared by every trial.
        data_path: dataset path for file-backed benchmarks (locomo, babi).
        limit: score only the first N questions of each split (fast runs).
        knobs: benchmark constructor keyword arguments (recorded in a compiled program).
        evaluate_kwargs: passed to ``evaluate`` (budget_tokens, top_k, reader, judge, objective).
    """

    def __init__(self, benchmark: Any = "generated", *, resources: Any = None, data_path: str | None = None,
                 limit: int | None = None, knobs: dict | None = None, **evaluate_kwargs: Any):
        from memarch.benchmarks import get_benchmark
        from memarch.pipeline.resources import Resources

        self.benchmark = get_benchmark(benchmark, data_path, **(knobs or {})) if isinstance(benchmark, str) else benchmark
        self.resources = resources or Resources()
        self.limit = limit
        self.knobs = dict(knobs or {})
        self.kwargs = evaluate_kwargs

    def program_settings(self) -> dict[str, Any]:
        """``{"top_k", "budget_tokens"}`` the trials read with: what a compiled program must carry."""
        from memarch.benchmarks.evaluation.evaluate import default_top_k, evaluate

        budget = self.kwargs.get("budget_tokens", evaluate.__kwdefaults__["budget_tokens"])  # evaluate's default
        return {"top_k": self.kwargs.get("top_k") or default_top_k(budget), "budget_tokens": budget}

    def evaluation_record(self, scores: dict[str, float | None], objective: str) -> Any:
        """The `EvaluationRecord` of scores this metric reported: benchmark, data, knobs, split."""
        from pathlib import Path

        from memarch.pipeline.evaluation_record import EvaluationRecord, data_sha256, split_settings

        path = getattr(self.benchmark, "path", None)
        return EvaluationRecord(
            benchmark=self.benchmark.name, objective=objective, **self.program_settings(),
            data=str(Path(path).resolve()) if path is not None else None, data_sha256=data_sha256(path),
            knobs={**getattr(self.benchmark, "knobs", {}), **self.knobs}, split=split_settings(self.benchmark),
            limit=self.limit, scores=dict(scores))

    @property
    def family(self) -> str:
        from memarch.benchmarks.base import TaskBenchmark

        default = "experience" if isinstance(self.benchmark, TaskBenchmark) else "conversation"
        return getattr(self.benchmark, "family", default)

    def supports_instances(self) -> bool:
        """Conversation benchmarks score dialogue by dialogue (a pruner can stop a trial between
        two); agent benchmarks score a collection phase, then tasks, as one."""
        from memarch.benchmarks.base import TaskBenchmark

        return not isinstance(self.benchmark, TaskBenchmark)

    def __call__(self, architecture: Architecture | None, data: Any = "search", *,
                 on_instance: Any = None) -> TrialResult:
        from memarch.benchmarks.evaluation.evaluate import evaluate

        extra = {"on_instance": on_instance} if on_instance is not None else {}
        return evaluate(architecture, self.benchmark, split=str(data), resources=self.resources,
                        limit=self.limit, **self.kwargs, **extra)


class CachedMetric:
    """Memoise a deterministic metric per (architecture, data): seeds and strategies of one
    `compare` that meet the same architecture pay for it once. Only for LM-free (deterministic)
    metrics; failed results are not kept.

    Example::

        metric = CachedMetric(BenchmarkMetric("generated"))
    """

    def __init__(self, metric: Any):
        self.metric = metric
        self.results: dict[tuple[str, str], TrialResult] = {}
        self.evaluations = 0

    @property
    def family(self) -> str:
        return getattr(self.metric, "family", "conversation")

    def __getattr__(self, name: str) -> Any:
        # program_settings(), evaluation_record(), benchmark, ...: the wrapped metric's.
        if name.startswith("_") or name == "metric":
            raise AttributeError(name)
        return getattr(self.metric, name)

    def supports_instances(self) -> bool:
        from memarch.optimizers.search.fidelity import supports_instances

        return supports_instances(self.metric)

    def __call__(self, architecture: Architecture | None, data: Any = "search", *,
                 on_instance: Any = None) -> TrialResult:
        """The memoised result (a copy: the search annotates costs on it); with ``on_instance`` a
        memoised result is handed out dialogue by dialogue, and a new evaluation that is stopped
        early is not kept (only complete results are)."""
        import copy

        from memarch.optimizers.search.fidelity import staged

        key = (architecture.key() if architecture else "none", str(data))
        if key not in self.results:
            self.evaluations += 1
            result = self.metric(architecture, data, on_instance=on_instance) if on_instance is not None \
                else self.metric(architecture, data)
            if result.failed or "instances" in result.metadata and \
                    result.metadata["instances"]["done"] < result.metadata["instances"]["total"]:
                return result
            self.results[key] = result
            return copy.deepcopy(result)
        result = copy.deepcopy(self.results[key])
        return staged(result, on_instance) if on_instance is not None else result

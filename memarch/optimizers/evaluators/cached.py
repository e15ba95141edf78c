"""`EvaluatorWrapper` (an `Evaluator` around another, every member handed through by name) and
`CachedEvaluator`, which memoises a deterministic evaluator per (architecture, data)."""
from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from memarch.optimizers.evaluators.base import Evaluator, as_evaluator
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.trial import TrialResult

if TYPE_CHECKING:
    from memarch.benchmarks.base import Benchmark
    from memarch.benchmarks.evaluation.settings import EvaluationSettings
    from memarch.optimizers.pruners.instances import OnInstance
    from memarch.pipeline.evaluation_record import EvaluationRecord


class EvaluatorWrapper(Evaluator):
    """An `Evaluator` that adds to ``inner``: every member is ``inner``'s unless overridden (declared
    one by one, so the contract is the base class's, not whatever the inner object has).

    Example::

        class Logged(EvaluatorWrapper):
            def __call__(self, architecture, data="search", *, on_instance=None):
                print("evaluating", architecture)
                return super().__call__(architecture, data, on_instance=on_instance)
    """

    def __init__(self, inner: Evaluator):
        self.inner = as_evaluator(inner)

    def __call__(self, architecture: Architecture | None, data: Any = "search", *,
                 on_instance: "OnInstance | None" = None) -> TrialResult:
        return self.inner(architecture, data, on_instance=on_instance)

    @property
    def family(self) -> str:
        return self.inner.family

    @property
    def metric(self) -> str:
        return self.inner.metric

    @property
    def benchmark(self) -> "Benchmark | None":
        return self.inner.benchmark

    @property
    def limit(self) -> int | None:
        return self.inner.limit

    @property
    def settings(self) -> "EvaluationSettings | None":
        return self.inner.settings

    @property
    def memory_budget(self) -> Any:
        return self.inner.memory_budget

    @property
    def evaluations(self) -> int | None:
        return self.inner.evaluations

    @property
    def opt_in_modules(self) -> bool:
        return self.inner.opt_in_modules

    def supports_instances(self) -> bool:
        return self.inner.supports_instances()

    def program_settings(self) -> dict[str, Any]:
        return self.inner.program_settings()

    def evaluation_record(self, scores: dict[str, float | None], metric: str) -> "EvaluationRecord | None":
        return self.inner.evaluation_record(scores, metric)

    def prefetch(self, data: list[Any], *, encoders: Any = None) -> Any:
        return self.inner.prefetch(data, encoders=encoders)


class CachedEvaluator(EvaluatorWrapper):
    """Memoise a deterministic evaluator per (architecture, data): seeds and strategies of one
    `compare` that meet the same architecture pay for it once. Only for LM-free (deterministic)
    evaluators; failed results are not kept.

    Example::

        evaluator = CachedEvaluator(BenchmarkEvaluator("generated"))
        evaluator.evaluations   # evaluations actually run (the cache's misses)
    """

    def __init__(self, inner: Evaluator):
        super().__init__(inner)
        self.results: dict[tuple[str, str], TrialResult] = {}
        self._evaluations = 0

    @property
    def evaluations(self) -> int:
        return self._evaluations

    def __call__(self, architecture: Architecture | None, data: Any = "search", *,
                 on_instance: "OnInstance | None" = None) -> TrialResult:
        """The memoised result (a copy: the search annotates costs on it); with ``on_instance`` a
        memoised result is handed out dialogue by dialogue, and a new evaluation that is stopped
        early is not kept (only complete results are)."""
        from memarch.optimizers.pruners.instances import staged

        key = (architecture.key() if architecture else "none", str(data))
        if key not in self.results:
            self._evaluations += 1
            result = self.inner(architecture, data, on_instance=on_instance)
            if result.failed or "instances" in result.metadata and \
                    result.metadata["instances"]["done"] < result.metadata["instances"]["total"]:
                return result
            self.results[key] = result
            return copy.deepcopy(result)
        result = copy.deepcopy(self.results[key])
        return staged(result, on_instance) if on_instance is not None else result

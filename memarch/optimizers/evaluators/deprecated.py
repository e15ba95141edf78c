"""The evaluators' names of earlier releases, kept for one release with a `DeprecationWarning`:
`BenchmarkMetric` is `BenchmarkEvaluator`, `CachedMetric` is `CachedEvaluator` (whose wrapped
evaluator is ``inner``; ``metric`` is now the metric's name, as on every `Evaluator`)."""
from __future__ import annotations

from typing import Any

from memarch.optimizers.evaluators.benchmark import BenchmarkEvaluator
from memarch.optimizers.evaluators.cached import CachedEvaluator
from memarch.pipeline.deprecation import warn_renamed


class BenchmarkMetric(BenchmarkEvaluator):
    """Deprecated: `BenchmarkEvaluator`."""

    def __init__(self, *args: Any, **kwargs: Any):
        warn_renamed("BenchmarkMetric", "BenchmarkEvaluator", "memarch.optimizers")
        super().__init__(*args, **kwargs)


class CachedMetric(CachedEvaluator):
    """Deprecated: `CachedEvaluator` (the wrapped evaluator is ``inner``)."""

    def __init__(self, *args: Any, **kwargs: Any):
        warn_renamed("CachedMetric", "CachedEvaluator", "memarch.optimizers")
        super().__init__(*args, **kwargs)

"""`LandscapeEvaluator`: an `Evaluator` that answers by lookup in a landscape — a trial costs
nothing and returns the real per-query outcomes that were stored."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memarch.optimizers.evaluators.base import Evaluator
from memarch.optimizers.landscapes.table import Landscape, key_of
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.trial import TrialResult

if TYPE_CHECKING:
    from memarch.optimizers.pruners.instances import OnInstance


class LandscapeEvaluator(Evaluator):
    """Scores an architecture (None: the no-memory agent) by looking it up in a landscape.

    Example::

        evaluator = LandscapeEvaluator(Landscape.load("locomo.npz"), metric="answer_recall")
        evaluator(Architecture(("turn",), "vector", "hybrid", "lightweight"), "search").score
        evaluator.evaluations     # 1 (lookups)

    Args:
        landscape: the table.
        metric: a stored metric (default: ``answer_span`` if stored, else the first).
        threshold: a query scoring below it is a failure (attributed).
    """

    def __init__(self, landscape: Landscape, metric: str | None = None, threshold: float = 0.5):
        self.landscape = landscape
        self._metric = metric or landscape.default_metric
        landscape._check_metric(self._metric)
        self.threshold = float(threshold)
        self.lookups = 0
        self.missing = 0

    @property
    def family(self) -> str:
        return self.landscape.family

    @property
    def metric(self) -> str:
        return self._metric

    @property
    def evaluations(self) -> int:
        return self.lookups

    def supports_instances(self) -> bool:
        return True  # per-query outcomes: a lookup replays dialogue by dialogue (pruners.staged)

    def __call__(self, architecture: Architecture | None, data: Any = "search", *,
                 on_instance: "OnInstance | None" = None) -> TrialResult:
        """The stored result; with ``on_instance`` it is handed out dialogue by dialogue, as a
        live evaluation would, and cut where the callback says stop (a pruned trial)."""
        self.lookups += 1
        split = str(data)
        if architecture not in self.landscape:
            self.missing += 1
            sample = self.landscape.meta.get("sample", {})
            return TrialResult(
                architecture=architecture, benchmark=self.landscape.benchmark, split=split, score=0.0,
                failed=True, error=f"{key_of(architecture)} is not in the landscape (sampled: "
                                   f"{sample.get('architectures', len(self.landscape) - 1)} of {sample.get('space', '?')})",
                metadata={"metric": self._metric, "landscape": self.landscape.path})
        result = self.landscape.result(architecture, split, self._metric, self.threshold)
        if on_instance is not None:
            from memarch.optimizers.pruners import staged

            return staged(result, on_instance)
        return result

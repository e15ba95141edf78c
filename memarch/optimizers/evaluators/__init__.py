"""Evaluators: what the search scores an architecture with, one contract (`Evaluator`, with every
member its callers read declared) and its implementations.

- ``base``       `Evaluator`, `CallableEvaluator` (a plain function), `as_evaluator`;
- ``benchmark``  `BenchmarkEvaluator`: a benchmark split through `evaluate`;
- ``cached``     `EvaluatorWrapper` and `CachedEvaluator` (memoised per architecture and data).

`memarch.optimizers.landscapes.table.LandscapeEvaluator` answers by lookup in a landscape. The old
names `BenchmarkMetric` and `CachedMetric` (and `memarch.optimizers.search.metric`) still work for
one release, with a `DeprecationWarning`.

May import: ``pruners``, ``benchmarks`` and the layers below.
"""
from memarch.optimizers.evaluators.base import CallableEvaluator, Evaluator, as_evaluator
from memarch.optimizers.evaluators.benchmark import BenchmarkEvaluator
from memarch.optimizers.evaluators.cached import CachedEvaluator, EvaluatorWrapper
from memarch.optimizers.evaluators.deprecated import BenchmarkMetric, CachedMetric

__all__ = ["BenchmarkEvaluator", "BenchmarkMetric", "CachedEvaluator", "CachedMetric", "CallableEvaluator",
           "Evaluator", "EvaluatorWrapper", "as_evaluator"]

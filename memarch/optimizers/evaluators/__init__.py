"""Evaluators: what the search scores an architecture with, one contract (`Evaluator`, with every
member its callers read declared) and its implementations.

- ``base``       `Evaluator`, `CallableEvaluator` (a plain function), `as_evaluator`;
- ``benchmark``  `BenchmarkEvaluator`: a benchmark split through `evaluate`;
- ``cached``     `EvaluatorWrapper` and `CachedEvaluator` (memoised per architecture and data).

`memarch.optimizers.landscapes.evaluator.LandscapeEvaluator` answers by lookup in a landscape.

May import: ``pruners``, ``benchmarks`` and the layers below.
"""
from memarch.optimizers.evaluators.base import CallableEvaluator, Evaluator, as_evaluator
from memarch.optimizers.evaluators.benchmark import BenchmarkEvaluator
from memarch.optimizers.evaluators.cached import CachedEvaluator, EvaluatorWrapper

__all__ = ["BenchmarkEvaluator", "CachedEvaluator", "CallableEvaluator", "Evaluator", "EvaluatorWrapper",
           "as_evaluator"]

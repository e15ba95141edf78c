"""The search over memory architectures: an Optuna space derived from the registry, the strategies
(random, tpe, bruteforce, guided), resumable multi-worker studies, MLflow tracking, `compile()` and
`compare`."""
from memarch.optimizers.compare import Comparison, compare
from memarch.optimizers.compile import CompileReport, MemarchOptimizer
from memarch.optimizers.metric import BenchmarkMetric, CachedMetric
from memarch.optimizers.space import SearchSpace
from memarch.optimizers.strategies import STRATEGIES, Strategy, make_strategy

__all__ = ["MemarchOptimizer", "CompileReport", "compare", "Comparison", "BenchmarkMetric", "CachedMetric",
           "SearchSpace", "Strategy", "STRATEGIES", "make_strategy"]

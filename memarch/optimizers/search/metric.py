"""Deprecated module path (one release): the evaluators live in `memarch.optimizers.evaluators`."""
from memarch.pipeline.deprecation import moved_names

__getattr__ = moved_names(__name__, {
    "BenchmarkMetric": "memarch.optimizers.evaluators:BenchmarkEvaluator",
    "CachedMetric": "memarch.optimizers.evaluators:CachedEvaluator",
}, globals())

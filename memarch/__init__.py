"""memarch: search for the best long-term-memory architecture for an LLM agent.

The entry points are importable from here (``from memarch import MemarchOptimizer,
BenchmarkEvaluator, evaluate, compare, Memory``); the core types load at once, everything heavy
(DSPy, torch, Optuna, MLflow) only when a name that needs it is first used.
"""
from memarch.errors import MemarchError
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.episodes import Episode, Query, Step, Turn
from memarch.pipeline.items import LineageEntry, MemoryItem, Usage
from memarch.pipeline.retrieval import Retrieval, ScoredItem
from memarch.pipeline.space import ArchitectureSpace

from memarch._version import __version__  # noqa: E402  (re-exported)
from memarch.pipeline.registry import REGISTRY as _REGISTRY


def _load_builtin_modules() -> None:
    # The built-in modules sit two layers above the registry: the package that holds both wires them.
    import memarch.modules

    memarch.modules.load()


_REGISTRY.add_loader(_load_builtin_modules)

# name -> the module that defines it, imported when the name is first used.
_LAZY = {
    "MemoryProgram": "memarch.pipeline.program", "Resources": "memarch.pipeline.resources",
    "Embedder": "memarch.pipeline.embed",
    "Memory": "memarch.app.memory", "MemoryRecord": "memarch.app.records", "AsyncMemory": "memarch.app.asynchronous",
    "get_benchmark": "memarch.benchmarks", "evaluate": "memarch.benchmarks.evaluation.evaluate",
    "EvaluationSettings": "memarch.benchmarks.evaluation.settings",
    "MemarchOptimizer": "memarch.optimizers.compile", "SearchSettings": "memarch.optimizers.compile",
    "PromptSettings": "memarch.optimizers.compile",
    "CompileReport": "memarch.optimizers.compile", "compare": "memarch.optimizers.comparison",
    "Comparison": "memarch.optimizers.comparison", "CompareSettings": "memarch.optimizers.comparison",
    "Evaluator": "memarch.optimizers.evaluators", "BenchmarkEvaluator": "memarch.optimizers.evaluators",
    "CachedEvaluator": "memarch.optimizers.evaluators",
    "GuidedSampler": "memarch.optimizers.samplers", "make_sampler": "memarch.optimizers.samplers",
    "ParamSpace": "memarch.optimizers.search.param_space",
    "record_result": "memarch.optimizers.search.trial_function",
    "record_outcomes": "memarch.optimizers.search.trial_function",
}


def __getattr__(name):
    import importlib

    if name not in _LAZY:
        raise AttributeError(f"module 'memarch' has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)


__all__ = sorted(["Architecture", "ArchitectureSpace", "Episode", "LineageEntry", "MemarchError", "MemoryItem", "Query",
                  "Retrieval", "ScoredItem", "Step", "Turn", "Usage", *_LAZY])

"""memarch: search for the best long-term-memory architecture for an LLM agent."""
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


_SEARCH = ("GuidedSampler", "ParamSpace", "record_result", "record_outcomes", "make_sampler")


def __getattr__(name):  # heavy imports (dspy, torch, optuna) only when asked for
    if name == "MemoryProgram":
        from memarch.pipeline.program import MemoryProgram

        return MemoryProgram
    if name in ("Memory", "MemoryRecord"):
        import memarch.app.memory as memory_app

        return getattr(memory_app, name)
    if name == "AsyncMemory":
        from memarch.app.asynchronous import AsyncMemory

        return AsyncMemory
    if name == "SearchSpace":  # the Optuna parameter view's old name; one release of grace
        import warnings

        warnings.warn("memarch.SearchSpace is now memarch.ParamSpace", DeprecationWarning, stacklevel=2)
        name = "ParamSpace"
    if name in _SEARCH:
        import memarch.optimizers as optimizers

        return getattr(optimizers, name)
    raise AttributeError(name)


__all__ = [
    "Architecture", "ArchitectureSpace", "AsyncMemory", "Episode", "LineageEntry", "MemarchError", "Memory", "MemoryItem",
    "MemoryProgram", "MemoryRecord", "Query", "Retrieval", "ScoredItem", "Step", "Turn", "Usage", *_SEARCH,
]

"""Stores: how memory is kept (json, vector, hybrid, graph, llm_graph)."""
import importlib
import pkgutil

from memarch.modules.stores._caches import StoreCaches  # `store.caches`: what modules derive from a store
from memarch.modules.stores._versioned import VersionedCache  # shared by the retrievers' per-store caches
from memarch.modules.stores.base import Store, matches
__all__ = ["Store", "StoreCaches", "VersionedCache", "matches"]

# Every module file in this package registers itself on import: adding a module is adding a file.
for _info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
    if _info.name != "base" and not _info.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_info.name}")

"""Managers: how memory evolves (lightweight, json_full, tool_manager, graph_consolidate)."""
import importlib
import pkgutil

from memarch.modules.managers._conflicts import describe  # a conflict in words (the fine-tuning export's)
from memarch.modules.managers.base import Manager
__all__ = ["Manager", "describe"]

# Every module file in this package registers itself on import: adding a module is adding a file.
for _info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
    if _info.name != "base" and not _info.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_info.name}")

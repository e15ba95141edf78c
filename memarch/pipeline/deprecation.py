"""Renames with a grace period: an old keyword, attribute or module-level name keeps working for
one release and warns (`DeprecationWarning`) with the new name, as scikit-learn's deprecations do.

Example::

    kwargs = renamed_keywords(kwargs, {"objective": "metric"}, where="evaluate()")
    __getattr__ = moved_names(__name__, {"count_words": "count_words"}, globals())
"""
from __future__ import annotations

import warnings
from typing import Any, Callable


def warn_renamed(old: str, new: str, where: str, *, stacklevel: int = 3) -> None:
    """One `DeprecationWarning`: ``old`` is now ``new`` (in ``where``)."""
    warnings.warn(f"{where}: {old!r} is deprecated and will be removed in the next release; use {new!r}",
                  DeprecationWarning, stacklevel=stacklevel)


def renamed_keywords(kwargs: dict[str, Any], renames: dict[str, str], *, where: str) -> dict[str, Any]:
    """``kwargs`` with each old keyword of ``renames`` (old -> new) replaced by its new name, warning
    once per old keyword; giving both names is a `TypeError`."""
    out = dict(kwargs)
    for old, new in renames.items():
        if old in out:
            if new in out:
                raise TypeError(f"{where}: got both {old!r} (deprecated) and {new!r}")
            warn_renamed(old, new, where, stacklevel=4)
            out[new] = out.pop(old)
    return out


def deprecated_attribute(old: str, new: str, where: str) -> property:
    """A property ``old`` that warns and reads / writes the attribute ``new``."""

    def get(self: Any) -> Any:
        warn_renamed(old, new, f"{where}.{old}")
        return getattr(self, new)

    def set_(self: Any, value: Any) -> None:
        warn_renamed(old, new, f"{where}.{old}")
        setattr(self, new, value)

    return property(get, set_, doc=f"Deprecated: use ``{new}``.")


def moved_names(module: str, renames: dict[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` serving each old name of ``renames`` (old -> new, a name in
    ``namespace`` or a ``"package.module:name"`` path) with a warning."""

    def __getattr__(name: str) -> Any:
        if name not in renames:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        new = renames[name]
        warn_renamed(name, new.replace(":", "."), module)
        if ":" in new:
            import importlib

            path, _, attr = new.partition(":")
            return getattr(importlib.import_module(path), attr)
        return namespace[new]

    return __getattr__

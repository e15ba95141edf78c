"""Language models for memarch: the embedded local model, hosted and base-URL endpoints, the
task/meta/judge roles, typed calls with a parse policy, and token accounting.

    from memarch.lm import LMRoles, make_lm, local_lm, Accounting

The names load on first use (PEP 562): most of them import DSPy (~1 s), which a command that only
adds the LM options to its parser (``memarch --help``, ``space``, ``validate``) never needs.
"""
from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "Accounting": "accounting", "RoleUsage": "accounting", "UsageSnapshot": "accounting",
    "add_lm_arguments": "arguments", "roles_from_args": "arguments",
    "LMSpec": "config", "configure_lm_cache": "config", "lm_cache_dir": "config",
    "LlamaCppEngine": "engine", "LMOutputError": "errors", "LMUnavailableError": "errors",
    "LOCAL_MODEL": "local", "LocalServer": "local", "find_gguf": "local",
    "ROLES": "roles", "LMRoles": "roles", "as_unavailable": "roles", "guard": "roles",
    "local_lm": "roles", "make_lm": "roles", "call_typed": "structured", "is_placeholder": "structured",
}
__all__ = list(_WHERE)


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'memarch.lm' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"memarch.lm.{where}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

"""Language models for memarch: the embedded local model, hosted and base-URL endpoints, the
task/meta/judge roles, typed calls with a parse policy, and token accounting.

    from memarch.lm import LMRoles, make_lm, local_lm, Accounting
"""
from memarch.lm.accounting import Accounting, RoleUsage, UsageSnapshot
from memarch.lm.arguments import add_lm_arguments, roles_from_args
from memarch.lm.config import LMSpec, configure_lm_cache, lm_cache_dir
from memarch.lm.engine import LlamaCppEngine
from memarch.lm.errors import LMOutputError, LMUnavailableError
from memarch.lm.local import LOCAL_MODEL, LocalServer, find_gguf
from memarch.lm.roles import ROLES, LMRoles, as_unavailable, guard, local_lm, make_lm
from memarch.lm.structured import call_typed, is_placeholder

__all__ = [
    "Accounting", "RoleUsage", "UsageSnapshot", "add_lm_arguments", "roles_from_args", "LMSpec",
    "configure_lm_cache", "lm_cache_dir", "LlamaCppEngine", "LMOutputError", "LMUnavailableError",
    "LOCAL_MODEL", "LocalServer", "find_gguf", "ROLES", "LMRoles", "as_unavailable", "guard",
    "local_lm", "make_lm", "call_typed", "is_placeholder",
]

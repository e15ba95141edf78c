"""The ``--memory-budget`` option that `evaluate`, `compile` and `compare` share: words per
namespace or a percentage of the raw turn words, resolved against the benchmark (one line, exit 2
on a bad value)."""
from __future__ import annotations

from typing import Any


def add_memory_budget_argument(p) -> None:
    p.add_argument("--memory-budget", default=None, metavar="WORDS|P%",
                   help="hard limit on the words of active memory per namespace after every write, each manager "
                        "keeping it with its own policy; 'P%%' = P%% of the mean raw turn words of a "
                        "conversation of the search split (default: unlimited)")


def resolve_memory_budget(args: Any, benchmark: Any) -> Any:
    """The `MemoryBudget` of ``args.memory_budget`` (None when not given)."""
    spec = getattr(args, "memory_budget", None)
    if spec is None:
        return None
    from memarch.benchmarks.evaluation.memory_budget import MemoryBudget

    return MemoryBudget.resolve(spec, benchmark)

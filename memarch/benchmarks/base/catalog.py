"""A benchmark by name for `evaluate`: the benchmarks by name are the `memarch.benchmarks`
package's to know (its named modules sit above this one); the package hands its lookup here when it
is imported, which is before any of its modules runs, so a name given to `evaluate` resolves
without an import reaching up."""
from __future__ import annotations

from typing import Callable

from memarch.benchmarks.base.benchmark import Benchmark
from memarch.errors import MemarchError

_CATALOG: "Callable[[str], Benchmark] | None" = None


def use_catalog(lookup: "Callable[[str], Benchmark]") -> None:
    """Set how `resolve_benchmark` turns a name into a benchmark (`memarch.benchmarks.get_benchmark`)."""
    global _CATALOG
    _CATALOG = lookup


def resolve_benchmark(benchmark: "Benchmark | str") -> "Benchmark":
    """``benchmark`` itself, or the benchmark a name means (with its default data and knobs)."""
    if not isinstance(benchmark, str):
        return benchmark
    if _CATALOG is None:
        raise MemarchError(f"benchmark {benchmark!r}: no benchmark catalog (import memarch.benchmarks)")
    return _CATALOG(benchmark)

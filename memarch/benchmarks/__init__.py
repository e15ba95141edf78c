"""Benchmarks by name: ``generated`` (the embedded default), ``locomo``, ``babi``, ``longmemeval``,
``jsonl`` (your own data, docs/data.md) and, when its file exists, ``textworld``. A benchmark is one
file here defining a `Benchmark` (or `TaskBenchmark`) subclass whose ``name`` is the file's name and
whose declarations (``base/benchmark.py``) say what callers may read of it."""
from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from memarch.benchmarks.base import AgentTask, Benchmark, Dialogue, Question, TaskBenchmark, use_catalog
from memarch.errors import MemarchError

# Menu order; a name is offered only when its module file is present.
_KNOWN = ("generated", "locomo", "babi", "longmemeval", "textworld", "jsonl")
DEFAULT = "generated"


def available() -> list[str]:
    return [n for n in _KNOWN if importlib.util.find_spec(f"{__name__}.{n}") is not None]


BENCHMARKS: tuple[str, ...] = tuple(available())


def benchmark_class(name: str) -> type[Benchmark]:
    if name not in available():
        raise MemarchError(f"unknown benchmark {name!r} (known: {', '.join(available())})")
    module = importlib.import_module(f"{__name__}.{name}")
    for obj in vars(module).values():
        if isinstance(obj, type) and issubclass(obj, Benchmark) and obj.name == name:
            return obj
    raise MemarchError(f"memarch.benchmarks.{name} defines no Benchmark subclass named {name!r}")


def get_benchmark(name: str = DEFAULT, data: Any = None, **knobs: Any) -> Benchmark:
    """Build a benchmark by name.

    Example::

        get_benchmark("generated", seed=1, sessions=6)
        get_benchmark("locomo", "../shared/data/locomo", conversations=2)

    ``data`` is the dataset path for the file-backed benchmarks (ignored by ``generated``);
    ``knobs`` go to the benchmark's constructor (split seed, difficulty, task numbers...).
    """
    cls = benchmark_class(name)
    if data is not None:
        knobs["data"] = data
    try:
        return cls(**knobs)
    except (TypeError, ValueError) as exc:  # an unknown or out-of-range knob
        raise MemarchError(f"benchmark {name!r}: {exc}") from None


use_catalog(get_benchmark)  # a name given to evaluate() means what get_benchmark builds


def recorded_benchmark(record: Any, *, data: str | None = None, knobs: dict[str, Any] | None = None,
                       keep_split_seed: bool = True) -> Benchmark:
    """The benchmark, data and split an `EvaluationRecord` names; ``data`` / ``knobs`` override
    the recorded ones.

    The split rule is set after construction because the constructors name the split seed
    differently (``seed`` for file-backed benchmarks, ``split_seed`` for generated ones).
    """
    bench = get_benchmark(record.benchmark, data if data is not None else record.data,
                          **{**record.knobs, **(knobs or {})})
    split = dict(record.split)
    if not keep_split_seed:
        split.pop("seed", None)
    bench.use_split_rule(split)
    return bench


__all__ = ["AgentTask", "BENCHMARKS", "Benchmark", "Dialogue", "Question", "TaskBenchmark",
           "available", "benchmark_class", "get_benchmark", "recorded_benchmark"]

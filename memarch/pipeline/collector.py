"""Python's cyclic garbage collector, run less often while a trial runs (`fewer_collections`).

A trial allocates millions of short-lived objects (items, traces, scores), almost all freed by
reference counting; CPython 3.11 still starts a young-generation collection every 700 net
allocations, and each one walks every container allocated since — ~260 collections and ~15-20% of a
warm LoCoMo trial's time (``benchmarks/bench_trial.py --gc0 700`` runs with CPython's setting).
Raising the first threshold while a trial runs changes no result: the collector finds the same
cycles, later.
"""
from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

GEN0 = 20_000  # net allocations between young collections while a trial runs (CPython's default: 700)

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, int, int] | None = None


@contextmanager
def fewer_collections(gen0: int | None = None) -> Iterator[None]:
    """Within the block, a young collection every ``gen0`` net allocations (default `GEN0`, read at
    entry; never fewer than the threshold already set); the thresholds before it come back when the
    outermost block ends, also when several threads run trials at once.

    Example::

        with fewer_collections():
            run_stream(program, bench, settings)
    """
    global _depth, _saved
    gen0 = GEN0 if gen0 is None else int(gen0)
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
            if gen0 > _saved[0]:
                gc.set_threshold(gen0, *_saved[1:])
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved is not None:
                gc.set_threshold(*_saved)
                _saved = None

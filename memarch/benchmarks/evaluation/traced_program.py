"""A memory program traced for one trial: what its encoders wrote before the manager saw it (for
failure attribution) and how long its writes and reads took."""
from __future__ import annotations

import time
from typing import Any

from memarch.benchmarks.evaluation.attribution import WriteTrace
from memarch.pipeline.episodes import Episode
from memarch.pipeline.program import MemoryProgram


class TracedProgram:
    """Records, for attribution, what the encoders wrote before the manager saw it.

    ``MemoryProgram.write`` calls ``self.encode``; shadowing it on the instance for the length of
    the trial captures the encoder output without changing the program's behaviour. Writes and
    reads through it are timed (``write_s``, ``latency`` per read).

    Example::

        with TracedProgram(program, WriteTrace()) as traced:
            traced.write(episode)
            traced.read(query, k=8)
    """

    def __init__(self, program: MemoryProgram, trace: WriteTrace):
        self.program, self.trace = program, trace
        self._last: list = []
        self.write_s = 0.0
        self.latency: list[float] = []  # seconds per read

    def __enter__(self) -> "TracedProgram":
        original = type(self.program).encode.__get__(self.program)

        def encode(episode: Episode):
            self._last = original(episode)
            return self._last

        self.program.__dict__["encode"] = encode
        return self

    def write(self, episode: Episode) -> None:
        self._last = []
        t0 = time.perf_counter()
        kept = self.program.write(episode)
        self.write_s += time.perf_counter() - t0
        self.trace.record(self._last, kept)

    def read(self, *args: Any, **kwargs: Any):
        t0 = time.perf_counter()
        out = self.program.read(*args, **kwargs)
        self.latency.append(time.perf_counter() - t0)
        return out

    def __exit__(self, *exc: object) -> None:
        self.program.__dict__.pop("encode", None)

"""`AsyncMemory`: `Memory` for asyncio apps — every method a coroutine that runs the sync call
under the servers' thread policy (`memarch.app.threads.MemoryThreads`: reads on reader threads,
writes on a writer thread of their own), so the event loop never blocks on SQLite, the embedder or
the retriever.

How it runs, honestly: this is not a native async engine. One `Memory` lets a search of one user
run beside a write of another and takes one write at a time (its locks, app/locks.py); what the
threads buy is an event loop that stays free. Concurrency across processes is `Memory`'s (SQLite
WAL, one writer at a time)."""
from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any

from memarch.errors import MemarchError
from memarch.app.memory import Memory
from memarch.app.threads import MemoryThreads

# The sync methods AsyncMemory exposes as coroutines, with the same arguments; the writes run on
# the writer thread.
METHODS = ("add", "add_episode", "add_many", "update", "search", "context", "get", "get_all", "history",
           "source", "delete", "delete_verified", "remains", "count", "stats")
WRITES = frozenset({"add", "add_episode", "add_many", "update", "delete", "delete_verified"})


class AsyncMemory:
    """`Memory` with ``await``: the same methods, arguments and results.

    Example::

        memory = await AsyncMemory.open("program.json", path="mem/")
        await memory.add("I moved to Lisbon in May.", user_id="ana")
        hits = await memory.search("where does Ana live?", user_id="ana")
        await asyncio.gather(*(memory.add(f"note {i}", user_id="ana") for i in range(50)))
        await memory.aclose()

    Args:
        memory: the `Memory` to run (``AsyncMemory.open`` loads one without blocking the loop).
        workers: threads that run the reads (default 4); the writes run on one more thread of
            their own (`Memory` takes one write at a time anyway).
        max_pending: calls admitted at once (default 256); the callers beyond it wait
            (back-pressure), so a burst of tasks cannot queue without bound.
    """

    def __init__(self, memory: Memory, *, workers: int = 4, max_pending: int = 256):
        if not isinstance(memory, Memory):
            raise MemarchError(f"memory: expected a memarch.Memory, got {type(memory).__name__} "
                               "(AsyncMemory.open(program, path) loads one)")
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise MemarchError(f"workers: expected a positive integer, got {workers!r}")
        self.memory = memory
        self.threads = MemoryThreads(readers=workers, writers=1, max_pending=max_pending)
        self._closed = False

    @classmethod
    async def open(cls, program: Any, path: str | Path, *, resources: Any = None, workers: int = 4,
                   max_pending: int = 256) -> "AsyncMemory":
        """`Memory.load(program, path)` on a thread (it may load an embedding model), wrapped."""
        memory = await asyncio.to_thread(Memory.load, program, path, resources=resources)
        return cls(memory, workers=workers, max_pending=max_pending)

    async def _run(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self._closed:
            raise MemarchError("AsyncMemory is closed")
        run = self.threads.write if name in WRITES else self.threads.read
        return await run(getattr(self.memory, name), *args, **kwargs)

    async def aclose(self) -> None:
        """Wait for the calls in flight, then close the database."""
        if self._closed:
            return
        self._closed = True
        await asyncio.to_thread(self.threads.close)
        self.memory.close()

    async def __aenter__(self) -> "AsyncMemory":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"Async{self.memory!r}"


def _coroutine(name: str):
    sync = getattr(Memory, name)

    @functools.wraps(sync)
    async def method(self: AsyncMemory, *args: Any, **kwargs: Any) -> Any:
        return await self._run(name, *args, **kwargs)
    method.__doc__ = f"``await`` form of `Memory.{name}`: {sync.__doc__ or ''}"
    return method


for _name in METHODS:
    setattr(AsyncMemory, _name, _coroutine(_name))

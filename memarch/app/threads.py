"""The thread policy of every async caller of one `Memory` (the HTTP API and its hot routes, the MCP
server, `AsyncMemory`): a `Memory` call runs on a worker thread, so the event loop never blocks on
the database, the embedder or the retriever; reads on at most ``readers`` threads, writes on
``writers`` threads of their own; the calls beyond them wait in their pool's queue (and with
``max_pending``, the callers beyond it wait in the event loop).

Why so few threads: `Memory`'s Python runs one thread at a time anyway (the GIL). Two readers let a
search go on beside a write waiting on the database or the model; a write never holds a reader's
thread while it waits for another write (`Memory` takes one write at a time under its writer lock);
and 16 clients do not make 16 threads take turns with the interpreter (measured at 100k items: 6.0
ms of server CPU a request with anyio's 40 threads, ~3.5 ms with two).

The threads belong to their `MemoryThreads`: created with it (each started on first use), ended by
`close` or when it is garbage collected. Nothing is kept per event loop or in this module, so one
`MemoryThreads` serves one loop after another (a test client's, a server's)."""
from __future__ import annotations

import asyncio
import contextvars
import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from memarch.errors import MemarchError

READ_THREADS, WRITE_THREADS = 2, 1  # a server's `Memory` calls at once (reads, writes)


class MemoryThreads:
    """Two thread pools for one `Memory`'s calls: ``await threads.read(memory.search, "q", user_id="ana")``,
    ``await threads.write(memory.add, "hi", user_id="ana")``.

    Args:
        readers: threads that run reads (default `READ_THREADS`).
        writers: threads that run writes (default `WRITE_THREADS`).
        max_pending: calls admitted at once, reads and writes together; the callers beyond it wait
            in the event loop (back-pressure). None: no limit (a server's connection cap bounds them).
        name: the threads' name prefix (``name-read_0``, ``name-write_0``).
    """

    def __init__(self, readers: int = READ_THREADS, writers: int = WRITE_THREADS, *,
                 max_pending: int | None = None, name: str = "memarch-memory"):
        _positive("readers", readers), _positive("writers", writers)
        if max_pending is not None:
            _positive("max_pending", max_pending)
        self.readers, self.writers, self.max_pending = readers, writers, max_pending
        self._read = ThreadPoolExecutor(readers, thread_name_prefix=f"{name}-read")
        self._write = ThreadPoolExecutor(writers, thread_name_prefix=f"{name}-write")
        # asyncio's semaphore binds to the loop that first waits on it: an `AsyncMemory` lives in one loop.
        self._admit = asyncio.Semaphore(max_pending) if max_pending is not None else None

    async def read(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` (a search, a get, ...) on a reader thread."""
        return await self._run(self._read, fn, args, kwargs)

    async def write(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` (an add, an update, a delete, ...) on a writer thread."""
        return await self._run(self._write, fn, args, kwargs)

    async def _run(self, pool: ThreadPoolExecutor, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        # The caller's context variables go with the call, as `asyncio.to_thread` does.
        call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
        if self._admit is None:
            return await asyncio.get_running_loop().run_in_executor(pool, call)
        async with self._admit:
            return await asyncio.get_running_loop().run_in_executor(pool, call)

    def close(self) -> None:
        """Wait for the calls in flight, then end the threads (new calls are refused)."""
        self._read.shutdown(wait=True)
        self._write.shutdown(wait=True)

    def __repr__(self) -> str:
        return f"MemoryThreads(readers={self.readers}, writers={self.writers}, max_pending={self.max_pending})"


def _positive(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise MemarchError(f"{name}: expected a positive integer, got {value!r}")

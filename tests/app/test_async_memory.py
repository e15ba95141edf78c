"""`memarch.AsyncMemory`: the same calls as `Memory` as coroutines; 50 concurrent tasks adding,
updating and searching lose nothing; the event loop stays free while calls run; errors are the
same one-line MemarchErrors; closing waits for the calls in flight."""
from __future__ import annotations

import asyncio
import time
from concurrent.futures import Executor, Future

import pytest

from memarch import Architecture, AsyncMemory, Memory, MemarchError
from memarch.errors import NotFoundError

ARCH = Architecture(("turn",), "vector", "hybrid", "lightweight")



def test_fifty_concurrent_tasks_lose_nothing(program_file, tmp_path):
    async def scenario():
        async with await AsyncMemory.open(program_file, tmp_path / "mem", workers=4, max_pending=8) as memory:
            added = await asyncio.gather(*(
                memory.add(f"fact {i}: my locker code is c{i}q", user_id=f"u{i % 5}", timestamp="2026-05-03")
                for i in range(50)))
            searched = await asyncio.gather(*(memory.search(f"locker code c{i}q", user_id=f"u{i % 5}", limit=3)
                                              for i in range(50)))
            fixed = await asyncio.gather(*(memory.update(added[i][0].id, f"fact {i}: my locker code is d{i}q",
                                                         user_id=f"u{i % 5}") for i in range(0, 50, 5)))
            counts = [await memory.count(user_id=f"u{u}") for u in range(5)]
            stats = await memory.stats()
            return added, searched, fixed, counts, stats

    added, searched, fixed, counts, stats = asyncio.run(scenario())
    assert all(len(a) == 1 for a in added) and len({a[0].id for a in added}) == 50
    for i, hits in enumerate(searched):  # each fact found by its own code, only in its user's memory
        assert any(f"c{i}q" in h.text for h in hits) and all(h.user_id == f"u{i % 5}" for h in hits)
    assert [f[0].updated_from for f in fixed] == [added[i][0].id for i in range(0, 50, 5)]
    assert counts == [10] * 5 and stats["items"] == {"active": 50, "superseded": 10, "deleted": 0}
    with Memory.load(program_file, path=tmp_path / "mem") as again:  # all committed
        assert sum(again.count(user_id=f"u{u}") for u in range(5)) == 50


BLOCK = 1.0  # seconds one slow call sleeps on its worker thread (a slow embedder / disk)


async def _longest_loop_gap(call, interval: float = 0.01) -> tuple[object, float, float]:
    """Await ``call()`` while ticking every ``interval`` s on the event loop: (its result, the longest
    gap between ticks while it ran, how long it ran). A call that blocks the loop delays the tick
    due during it by as long as it blocks."""
    start = time.monotonic()
    stamps = [start]
    task = asyncio.ensure_future(call())
    while not task.done():
        await asyncio.sleep(interval)
        stamps.append(time.monotonic())
    return task.result(), max(b - a for a, b in zip(stamps, stamps[1:])), stamps[-1] - start


def _slow_add_gap(program_file, path, pool: Executor | None = None) -> tuple[object, float, float]:
    """`AsyncMemory.add` whose `Memory.add` first sleeps ``BLOCK`` s, under `_longest_loop_gap`
    (``pool``: what runs the calls instead of AsyncMemory's own worker threads)."""
    async def scenario():
        memory = await AsyncMemory.open(program_file, path, workers=2)
        if pool is not None:  # both of its thread pools (the add runs on the writer's)
            memory.threads.close()
            memory.threads._read = memory.threads._write = pool
        real_add = memory.memory.add

        def slow_add(*args, **kwargs):
            time.sleep(BLOCK)  # a slow embedder / disk: it must not block the loop
            return real_add(*args, **kwargs)
        memory.memory.add = slow_add
        try:
            return await _longest_loop_gap(lambda: memory.add("slow one", user_id="ana"))
        finally:
            await memory.aclose()

    return asyncio.run(scenario())


def _assert_loop_free(gap: float, ran: float) -> None:
    assert ran >= BLOCK, f"the slow call took {ran:.2f} s, not the {BLOCK} s it sleeps"
    # A free loop ticks every 10 ms, a loaded machine stretches that to tens of ms; a call on the
    # loop holds it for the whole BLOCK. Half of BLOCK tells the two apart with a wide margin.
    assert gap < BLOCK / 2, f"event loop blocked: no tick for {gap:.2f} s while a {BLOCK} s call ran"


def test_the_event_loop_stays_free_while_calls_run(program_file, tmp_path):
    added, gap, ran = _slow_add_gap(program_file, tmp_path / "mem")
    assert len(added) == 1 and added[0].text
    _assert_loop_free(gap, ran)


class _InlineExecutor(Executor):
    """A "pool" that runs each call at once on the submitting thread, i.e. on the event loop."""

    def submit(self, fn, /, *args, **kwargs):
        future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            future.set_exception(exc)
        return future


def test_the_loop_check_fails_when_the_calls_block_the_loop(program_file, tmp_path):
    # The same check against AsyncMemory whose dispatch runs the call on the loop (the bug it guards
    # against): the loop misses its ticks for the whole slow call, and the check says so.
    added, gap, ran = _slow_add_gap(program_file, tmp_path / "mem", pool=_InlineExecutor())
    assert len(added) == 1  # the call itself still works
    assert gap >= BLOCK * 0.9
    with pytest.raises(AssertionError, match="event loop blocked"):
        _assert_loop_free(gap, ran)


def test_errors_and_close(program_file, tmp_path):
    async def scenario():
        memory = await AsyncMemory.open(program_file, tmp_path / "mem")
        with pytest.raises(NotFoundError):
            await memory.get("nope", user_id="ana")
        with pytest.raises(MemarchError, match="query: expected a non-empty string"):
            await memory.search("", user_id="ana")
        pending = [asyncio.ensure_future(memory.add(f"note {i}", user_id="ana")) for i in range(10)]
        await asyncio.sleep(0)
        await asyncio.gather(*pending)
        await memory.aclose()
        await memory.aclose()  # twice is fine
        with pytest.raises(MemarchError, match="AsyncMemory is closed"):
            await memory.count(user_id="ana")

    asyncio.run(scenario())
    with pytest.raises(MemarchError, match="workers: expected a positive integer"):
        AsyncMemory(Memory.load(program_file, path=tmp_path / "m2"), workers=0)
    assert AsyncMemory.search.__doc__.startswith("``await`` form of `Memory.search`")

"""`memarch.AsyncMemory`: the same calls as `Memory` as coroutines; 50 concurrent tasks adding,
updating and searching lose nothing; the event loop stays free while calls run; errors are the
same one-line MemarchErrors; closing waits for the calls in flight."""
from __future__ import annotations

import asyncio
import time

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


def test_the_event_loop_stays_free_while_calls_run(program_file, tmp_path):
    async def scenario():
        memory = await AsyncMemory.open(program_file, tmp_path / "mem", workers=2)
        real_add = memory.memory.add

        def slow_add(*args, **kwargs):
            time.sleep(0.3)  # a slow embedder / disk: it must not block the loop
            return real_add(*args, **kwargs)
        memory.memory.add = slow_add
        ticks = 0

        async def ticker():
            nonlocal ticks
            for _ in range(20):
                await asyncio.sleep(0.01)
                ticks += 1
        await asyncio.gather(memory.add("slow one", user_id="ana"), ticker())
        await memory.aclose()
        return ticks

    assert asyncio.run(scenario()) == 20


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

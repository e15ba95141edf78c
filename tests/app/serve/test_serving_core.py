"""The serving core (memarch/app/serve/core.py, checks.py, errors.py; memarch/app/threads.py) under
its adapters: one thread policy for the HTTP API, its hot routes, the MCP tools and `AsyncMemory`
(reads on the reader threads, writes on the writer's), threads owned by the app that made them and
gone with it, no module-level state that grows with event loops, and every refusal in one shape."""
from __future__ import annotations

import asyncio
import gc
import json
import sys
import threading
import time

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp import Client

from memarch import Architecture, AsyncMemory, Memory
from memarch.app.serve.auth import TokenAuth
from memarch.app.serve.http_api import create_app
from memarch.app.serve.mcp_server import BearerAuth, build_mcp
from memarch.app.threads import MemoryThreads
from memarch.errors import MemarchError
from memarch.pipeline.program import MemoryProgram

ARCH = Architecture(("turn",), "hybrid", "hybrid", "lightweight")
ADMIN = "admin-token-0123456789abcdef"


@pytest.fixture
def memory(tmp_path, hash_resources):
    program = tmp_path / "program.json"
    MemoryProgram(ARCH, resources=hash_resources).save(program, include_memory=False)
    with Memory.load(program, path=tmp_path / "mem") as memory:
        yield memory


def _spy_threads(memory, monkeypatch) -> dict[str, set[str]]:
    """The names of the threads each of ``memory``'s search and add ran on."""
    seen: dict[str, set[str]] = {"search": set(), "add": set()}
    for name in seen:
        real = getattr(memory, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            seen[_name].add(threading.current_thread().name)
            return _real(*args, **kwargs)
        monkeypatch.setattr(memory, name, spy)
    return seen


def _readers_and_writers(seen: dict[str, set[str]]) -> None:
    assert seen["search"] and all(n.startswith("memarch-memory-read") for n in seen["search"]), seen
    assert seen["add"] and all(n.startswith("memarch-memory-write") for n in seen["add"]), seen


@pytest.mark.parametrize("hot", [True, False])
def test_the_http_api_runs_reads_and_writes_on_the_policys_threads(memory, monkeypatch, hot):
    seen = _spy_threads(memory, monkeypatch)
    with TestClient(create_app(memory, hot=hot)) as client:
        assert client.post("/v1/users/ana/memories", json={"messages": "I keep bees."}).status_code == 201
        assert client.post("/v1/users/ana/search", json={"query": "bees"}).status_code == 200
    _readers_and_writers(seen)


def test_the_mcp_tools_run_on_the_policys_threads(memory, monkeypatch):
    seen = _spy_threads(memory, monkeypatch)

    async def main() -> None:
        async with Client(build_mcp(memory), mode="legacy") as client:
            assert not (await client.call_tool("add_memory", {"user_id": "ana", "text": "I keep bees."})).is_error
            found = await client.call_tool("search_memory", {"user_id": "ana", "query": "bees"})
            assert not found.is_error and found.structured_content["items"]
    anyio.run(main)
    _readers_and_writers(seen)


def test_async_memory_runs_reads_and_writes_on_the_policys_threads(memory, monkeypatch):
    seen = _spy_threads(memory, monkeypatch)

    async def main() -> None:
        async with AsyncMemory(memory, workers=3) as am:
            assert (am.threads.readers, am.threads.writers) == (3, 1)
            await am.add("I keep bees.", user_id="ana")
            assert await am.search("bees", user_id="ana")
    asyncio.run(main())
    _readers_and_writers(seen)


def _module_state() -> dict[str, int]:
    """The size of every module-level dict, list and set of the serving modules."""
    sizes = {}
    for name, module in list(sys.modules.items()):
        if name.startswith("memarch.app.serve") or name == "memarch.app.threads":
            for attr, value in vars(module).items():
                if isinstance(value, (dict, list, set)) and not attr.startswith("__"):
                    sizes[f"{name}.{attr}"] = len(value)
    return sizes


def test_event_loops_and_apps_leave_no_module_state_behind(memory):
    """Three apps, each serving on an event loop of its own (kept alive, so no loop's id is reused):
    no module of the serving layer holds anything more after them (the thread limiters were once
    a module dict keyed by the loop's id, two entries per loop, never emptied)."""
    import httpx

    async def serve_once() -> None:
        transport = httpx.ASGITransport(app=create_app(memory))
        async with httpx.AsyncClient(transport=transport, base_url="http://memarch") as client:
            assert (await client.post("/v1/users/ana/memories", json={"messages": "I keep bees."})).status_code == 201
            assert (await client.post("/v1/users/ana/search", json={"query": "bees"})).status_code == 200

    loops = [asyncio.new_event_loop() for _ in range(4)]
    try:
        loops[0].run_until_complete(serve_once())  # the first requests import and memoise what they need
        before = _module_state()
        for loop in loops[1:]:
            loop.run_until_complete(serve_once())
        assert _module_state() == before
    finally:
        for loop in loops:
            loop.close()


def test_the_threads_belong_to_the_app_and_go_with_it(memory):
    before = set(threading.enumerate())
    app = create_app(memory)
    core = app.app.state.core
    assert core.threads is not create_app(memory).app.state.core.threads  # each app its own
    for _ in range(2):  # two event loops, one after the other, on the same threads
        with TestClient(app) as client:
            for _ in range(3):
                assert client.post("/v1/users/ana/search", json={"query": "bees"}).status_code == 200
            assert client.post("/v1/users/ana/memories", json={"messages": "I keep bees."}).status_code == 201
    started = [t for t in set(threading.enumerate()) - before if t.name.startswith("memarch-memory")]
    assert 2 <= len(started) <= core.threads.readers + core.threads.writers
    del app, core, client
    gc.collect()
    deadline = time.monotonic() + 10
    while any(t.is_alive() for t in started) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(t.is_alive() for t in started), "the app's threads outlived it"


def test_memory_threads_check_their_sizes_and_refuse_calls_after_close():
    with pytest.raises(MemarchError, match="readers: expected a positive integer"):
        MemoryThreads(readers=0)
    with pytest.raises(MemarchError, match="max_pending: expected a positive integer"):
        MemoryThreads(max_pending=True)
    threads = MemoryThreads()

    async def main() -> None:
        assert await threads.read(lambda a, b=0: a + b, 1, b=2) == 3
        threads.close()
        with pytest.raises(RuntimeError):
            await threads.write(lambda: None)
    asyncio.run(main())


def test_every_refusal_is_one_compact_error_body(memory):
    """The guard's refusals, FastAPI's and the hot routes' are the same bytes shape: compact JSON,
    ``{"error":"..."}``, non-ASCII as UTF-8 (the guard once wrote ``{"error": "..."}``, spaced and
    escaped)."""
    auth = TokenAuth.from_secrets({ADMIN: None, "bob-token-0123456789abcdef": ["bob"]})
    with TestClient(create_app(memory, auth=auth)) as client:
        assert client.post("/v1/users/ana/search", json={"query": "x"}).content == \
            b'{"error":"missing bearer token (Authorization: Bearer TOKEN)"}'
        r = client.post("/v1/users/Ana%20Mar%C3%ADa/search", json={"query": "x"},
                        headers={"Authorization": "Bearer bob-token-0123456789abcdef"})
        said = "{\"error\":\"this token may not act for user 'Ana María'\"}"
        assert (r.status_code, r.content) == (403, said.encode())
        r = client.get("/v1/users/ana/nowhere", headers={"Authorization": f"Bearer {ADMIN}"})
        assert (r.status_code, r.content) == (404, b'{"error":"Not Found"}')


def test_mcp_over_http_refuses_a_missing_token_in_the_one_error_shape():
    sent = []

    async def app(scope, receive, send):
        raise AssertionError("reached the app")

    async def send(message):
        sent.append(message)
    guard = BearerAuth(app, TokenAuth.from_secrets({ADMIN: None}))
    asyncio.run(guard({"type": "http", "headers": [(b"authorization", b"Bearer nope-0123456789abcdef")]}, None, send))
    assert sent[0]["status"] == 401 and (b"www-authenticate", b"Bearer") in sent[0]["headers"]
    assert json.loads(sent[1]["body"]) == {"error": "missing or wrong bearer token"}

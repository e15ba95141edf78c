"""The MCP server (`memarch.app.serve.mcp_server`) driven by the `mcp` SDK's own client: the tools
an agent sees (names, typed input schemas, descriptions), add -> search -> update -> search ->
delete end to end, errors returned as tool errors while the server keeps answering, a server
pinned to one user, and the real transports (a `memarch serve --mcp stdio` subprocess, streamable
HTTP with a bearer token)."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client

from memarch import Architecture, MemarchError, Memory
from memarch.app.serve.auth import TokenAuth
from memarch.app.serve.mcp_server import build_mcp, run_mcp

ARCH = Architecture(("turn",), "hybrid", "hybrid", "lightweight")
TOOLS = {"add_memory", "search_memory", "get_memory", "update_memory", "delete_memory"}
ROOT = Path(__file__).resolve().parents[3]


def run(server, script) -> None:
    """``script(client)`` against ``server`` in-process, over JSON-RPC on memory streams."""
    async def main() -> None:
        async with Client(server, mode="legacy") as client:
            await script(client)
    unwrapped(main)


def unwrapped(main) -> None:
    """``anyio.run(main)``, a failure inside the client's task groups raised as itself."""
    try:
        anyio.run(main)
    except BaseExceptionGroup as group:
        while isinstance(group, BaseExceptionGroup) and len(group.exceptions) == 1:
            group = group.exceptions[0]
        raise group


async def ok(client, tool: str, **arguments) -> dict:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def error(client, tool: str, **arguments) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error and result.structured_content is None
    return result.content[0].text


async def lifecycle(call) -> None:
    """add -> search -> update -> search -> delete -> search, through ``call(tool, **arguments)``."""
    added = (await call("add_memory", user_id="ana", timestamp="2026-05-03",
                        messages=[{"role": "user", "content": "I moved to Lisbon in May."},
                                  {"role": "assistant", "content": "How is the bakery job?"}]))["items"]
    episode = added[0]["episode_id"]
    assert [r["source_ids"] for r in added] == [[f"{episode}:0"], [f"{episode}:1"]]
    await call("add_memory", user_id="ana", text="My sister Rita plays the cello.")
    await call("add_memory", user_id="bob", text="Bob lives in Lisbon too.")
    hits = (await call("search_memory", user_id="ana", query="moved to Lisbon", limit=2))["items"]
    assert "Lisbon" in hits[0]["text"] and hits[0]["score"] >= hits[1]["score"]
    assert {h["user_id"] for h in hits} == {"ana"}
    old = hits[0]["id"]

    updated = await call("update_memory", user_id="ana", item_id=old, text="I moved to Porto in June.")
    assert updated["updated"] == old and "Porto" in updated["items"][0]["text"]
    new = updated["items"][0]["id"]
    assert (await call("get_memory", user_id="ana", item_id=old))["status"] == "superseded"
    texts = [h["text"] for h in (await call("search_memory", user_id="ana", query="moved to", limit=10))["items"]]
    assert any("Porto" in t for t in texts) and not any("Lisbon" in t for t in texts)

    deleted = await call("delete_memory", user_id="ana", item_id=new)
    assert {k: deleted[k] for k in ("deleted", "item_id", "tombstoned", "verified")} == \
        {"deleted": 1, "item_id": new, "tombstoned": 1, "verified": True}
    texts = [h["text"] for h in (await call("search_memory", user_id="ana", query="moved to", limit=10))["items"]]
    assert not any("Porto" in t for t in texts) and any("cello" in t for t in texts)
    gone = await call("get_memory", user_id="ana", item_id=new)
    assert gone["status"] == "deleted" and gone["lineage"][-1]["action"] == "deleted"


def test_tools_have_typed_schemas_and_descriptions(memory):
    async def script(client):
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == TOOLS
        required = {"add_memory": ["user_id"], "search_memory": ["query", "user_id"],
                    "get_memory": ["item_id", "user_id"], "update_memory": ["item_id", "text", "user_id"],
                    "delete_memory": ["item_id", "user_id"]}
        for name, tool in tools.items():
            schema = tool.input_schema
            assert sorted(schema["required"]) == sorted(required[name]), name
            assert schema["additionalProperties"] is False
            assert all(p.get("description") for p in schema["properties"].values()), name
            assert len(tool.description) > 120 and "Use it" in tool.description, name
            assert tool.output_schema["type"] == "object"
        add = tools["add_memory"].input_schema["properties"]
        assert set(add) == {"text", "messages", "user_id", "timestamp"}
        assert tools["search_memory"].input_schema["properties"]["limit"]["anyOf"][0] == {
            "maximum": 100, "minimum": 1, "type": "integer"}
        assert tools["search_memory"].annotations.read_only_hint is True
        assert tools["delete_memory"].annotations.destructive_hint is True
    run(build_mcp(memory), script)


def test_add_search_update_search_delete_end_to_end(memory):
    async def script(client):
        await lifecycle(lambda tool, **arguments: ok(client, tool, **arguments))
    run(build_mcp(memory), script)
    assert memory.count(user_id="bob") == 1  # the other user untouched


def test_errors_are_tool_errors_and_the_server_keeps_answering(memory):
    async def script(client):
        item = (await ok(client, "add_memory", user_id="ana", text="I adopted a cat named Miso."))["items"][0]["id"]
        for tool, arguments, says in [
            ("get_memory", {"item_id": "nope", "user_id": "ana"}, "no memory item 'nope'"),
            ("get_memory", {"item_id": item, "user_id": "bob"}, f"no memory item {item!r} of user 'bob'"),
            ("delete_memory", {"item_id": "nope", "user_id": "ana"}, "no memory item 'nope'"),
            ("update_memory", {"item_id": "nope", "user_id": "ana", "text": "x"}, "'nope'"),
            ("add_memory", {"user_id": "ana"}, "give exactly one of text or messages"),
            ("add_memory", {"user_id": "ana", "text": "a", "messages": [{"content": "b"}]}, "exactly one"),
            ("add_memory", {"user_id": "ana", "messages": [{"content": "b", "mood": "x"}]}, "Extra inputs"),
            ("add_memory", {"user_id": "ana", "text": "x", "timestamp": "not a date"}, "timestamp"),
            ("search_memory", {"query": "cat", "user_id": "ana", "limit": 0}, "greater than or equal to 1"),
            ("search_memory", {"query": "cat", "user_id": "ana", "limt": 3}, "limt"),
            ("search_memory", {"query": "   ", "user_id": "ana"}, "query: expected a non-empty string"),
            ("search_memory", {"query": "cat"}, "user_id"),
            ("search_memory", {"query": "cat", "user_id": ""}, "user_id"),
            ("no_such_tool", {}, "no_such_tool"),
        ]:
            assert says in await error(client, tool, **arguments), (tool, arguments)
            hits = (await ok(client, "search_memory", user_id="ana", query="cat name"))["items"]
            assert [h["id"] for h in hits] == [item]
        assert memory.count(user_id="ana") == 1  # nothing written by the failed calls
    run(build_mcp(memory), script)


def test_a_server_pinned_to_one_user_refuses_the_others(memory):
    memory.add("Bob's locker code is 4711.", user_id="bob")

    async def script(client):
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["search_memory"].input_schema["required"] == ["query"]  # user_id defaults to ana
        await ok(client, "add_memory", text="I moved to Lisbon in May.")
        assert (await ok(client, "search_memory", query="Lisbon"))["items"][0]["user_id"] == "ana"
        assert "serves only user 'ana', not 'bob'" in await error(client, "search_memory", query="code", user_id="bob")
        bob = memory.search("locker code", user_id="bob")[0].id
        assert "not 'bob'" in await error(client, "delete_memory", item_id=bob, user_id="bob")
        assert "no memory item" in await error(client, "get_memory", item_id=bob)  # ana has no such item
    run(build_mcp(memory, user_id="ana"), script)
    assert memory.count(user_id="ana") == 1 and memory.count(user_id="bob") == 1


def test_http_refuses_a_public_bind_without_tokens(memory):
    with pytest.raises(MemarchError, match="needs bearer tokens"):
        run_mcp(memory, "http", host="0.0.0.0", port=1)
    with pytest.raises(MemarchError, match="expected stdio or http"):
        run_mcp(memory, "sse")
    with pytest.raises(MemarchError, match="not both"):
        run_mcp(memory, "http", token=ADMIN, auth=TokenAuth.from_secrets({CY: ["cy"]}))


@pytest.mark.slow
def test_stdio_subprocess_end_to_end(program_file, tmp_path):
    """What an agent does: spawn ``memarch serve PROGRAM --path DIR --mcp stdio`` and talk over its pipes."""
    params = StdioServerParameters(command=sys.executable, cwd=str(ROOT), env=_env(),
                                   args=["-m", "memarch", "serve", str(program_file), "--path", str(tmp_path / "mem"),
                                         "--mcp", "stdio"])

    async def main() -> None:
        with anyio.fail_after(120), open(tmp_path / "stderr.log", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                assert {t.name for t in (await session.list_tools()).tools} == TOOLS

                async def call(tool, **arguments):
                    result = await session.call_tool(tool, arguments)
                    assert not result.is_error, result.content[0].text
                    return result.structured_content
                await lifecycle(call)
                result = await session.call_tool("get_memory", {"item_id": "nope", "user_id": "ana"})
                assert result.is_error and "no memory item 'nope'" in result.content[0].text
                assert (await call("search_memory", query="cello", user_id="ana"))["items"]
    unwrapped(main)
    with Memory.load(program_file, path=tmp_path / "mem") as after:  # it all went to disk
        assert "cello" in after.search("cello", user_id="ana")[0].text


@pytest.mark.slow
def test_streamable_http_with_scoped_bearer_tokens(program_file, tmp_path):
    """``run_mcp(..., "http", auth=...)``: no token or a wrong one is a 401; a token scoped to cy
    works for cy and is refused for bob; an unscoped one runs the whole lifecycle."""
    import httpx2  # the SDK's HTTP client

    port = _free_port()
    code = (f"from memarch import Memory; from memarch.app.serve.auth import TokenAuth; "
            f"from memarch.app.serve.mcp_server import run_mcp; "
            f"run_mcp(Memory.load({str(program_file)!r}, path={str(tmp_path / 'mem')!r}), 'http', port={port}, "
            f"auth=TokenAuth.from_secrets({{{ADMIN!r}: None, {CY!r}: ['cy']}}))")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=_env(), stdout=subprocess.DEVNULL,
                            stderr=open(tmp_path / "stderr.log", "w"))
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        _wait_for_port(port, proc)
        assert httpx2.post(url, json={}).status_code == 401
        assert httpx2.post(url, json={}, headers={"Authorization": "Bearer " + "x" * 32}).status_code == 401

        async def main() -> None:
            async with _http_client(url, CY) as client:
                await ok(client, "add_memory", user_id="cy", text="I moved to Lisbon in May.")
                assert "this token may not act for user 'bob'" in await error(
                    client, "add_memory", user_id="bob", text="Bob lives in Lisbon too.")
                assert "may not act for user 'bob'" in await error(client, "search_memory", user_id="bob", query="x")
            async with _http_client(url, ADMIN) as client:
                assert {t.name for t in (await client.list_tools()).tools} == TOOLS
                await lifecycle(lambda tool, **arguments: ok(client, tool, **arguments))
        unwrapped(main)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


ADMIN, CY = "admin-token-0123456789abcdef", "cy-token-0123456789abcdef"


@asynccontextmanager
async def _http_client(url: str, token: str):
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http, \
            Client(streamable_http_client(url, http_client=http)) as client:
        yield client


def _env() -> dict[str, str]:
    return {"MEMARCH_CACHE_DIR": os.environ["MEMARCH_CACHE_DIR"], "HF_HUB_OFFLINE": "1",
            "PYTHONPATH": str(ROOT)}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the server exited"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listening on {port} after {timeout} s")

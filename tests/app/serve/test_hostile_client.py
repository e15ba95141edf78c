"""The holes a hostile client found in `memarch serve` (issue 34), each closed and kept closed: one
user-id rule for HTTP paths, /v1/bulk and MCP; private files and folders; JSON errors for requests
uvicorn's parser refuses; a deadline on request headers and on bodies, a connection cap, /health
answering beside 300 half-open connections; MCP's stdio transport answering a line that is not
JSON-RPC; an idempotent delete; no server path in an error; a clean exit on SIGTERM in every mode.
Issue 51's holes are in test_hostile_requests.py."""
from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time

import httpx
import pytest

from memarch import Architecture, Memory
from memarch.app.messages import USER_ID_MAX, as_user
from memarch.app.serve.mcp_server import build_mcp
from memarch.errors import MemarchError

from test_mcp import error, ok, run
from test_serve_cli import free_port, serve, wait_healthy

ARCH = Architecture(("turn",), "hybrid", "hybrid", "lightweight")


@pytest.fixture
def program(program_file):
    """``ARCH`` saved with the hash embedder (tests/app/conftest.py)."""
    return program_file


# -- one user-id rule ----------------------------------------------------------------------------
BAD_USERS = ["", " ", "a/b", "nul\x00", "line\nbreak", "tab\t", "\x85", "x" * (USER_ID_MAX + 1)]


def test_one_user_id_rule_for_memory_http_bulk_and_mcp(client, memory):
    for good in ("ana", "Ana María", "team:42", "x" * USER_ID_MAX, "a.b@c"):
        assert as_user(good) == good
    for bad in BAD_USERS:
        with pytest.raises(MemarchError, match="user_id: expected 1-200 characters"):
            as_user(bad)
    # HTTP: the path's user id, percent-encoded as a client would send it
    for bad in ("nul%00", "line%0Abreak", "x" * (USER_ID_MAX + 1), "%20"):
        for method, route, body in (("POST", "memories", {"messages": "hello"}), ("POST", "search", {"query": "q"}),
                                    ("GET", "memories", None), ("DELETE", "", None)):
            r = client.request(method, f"/v1/users/{bad}/{route}".rstrip("/"), json=body)
            assert r.status_code == 400, (bad, route, r.text)
            assert r.json()["error"].startswith("user_id: expected 1-200 characters")
    # /v1/bulk: the same rule in its schema (422 before anything is written)
    for bad in BAD_USERS:
        r = client.post("/v1/bulk", json={"sessions": [{"user_id": "ana", "messages": "ok"},
                                                       {"user_id": bad, "messages": "hello"}]})
        assert r.status_code == 422, (bad, r.text)
    assert memory.stats()["users"] == 0

    async def script(mcp):
        for bad in BAD_USERS:
            assert "user_id" in await error(mcp, "add_memory", user_id=bad, text="hello")
        assert (await ok(mcp, "add_memory", user_id="x" * USER_ID_MAX, text="hello"))["items"]
    run(build_mcp(memory), script)
    assert memory.stats()["users"] == 1


# -- private files -------------------------------------------------------------------------------
def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_new_memory_and_the_caches_are_private(tmp_path, program, monkeypatch):
    old = os.umask(0o022)  # what most machines have: files readable by every local user unless asked
    try:
        with Memory.load(program, path=tmp_path / "deep" / "mem") as m:
            m.add("My PIN is 4921.", user_id="ana")
            m.search("PIN", user_id="ana")
        assert mode(tmp_path / "deep" / "mem") == 0o700
        files = [p for p in (tmp_path / "deep" / "mem").iterdir()]
        assert {p.name for p in files} >= {"memory.db", "memory.lock"}
        assert {p.name: mode(p) for p in files} == {p.name: 0o600 for p in files}
        from memarch.pipeline.cache import DiskCache

        cache = DiskCache(tmp_path / "cache" / "embeddings.sqlite")
        cache.set("k", b"v")
        assert mode(tmp_path / "cache") == 0o700
        assert all(mode(p) == 0o600 for p in (tmp_path / "cache").iterdir())
    finally:
        os.umask(old)


# -- idempotent deletes, no server paths -----------------------------------------------------------
def test_deleting_an_item_twice_is_not_an_error_anywhere(client, memory):
    item = client.post("/v1/users/ana/memories", json={"messages": "I adopted a cat named Miso."}).json()["items"][0]
    assert client.delete(f"/v1/users/ana/memories/{item['id']}").json()["deleted"] == 1
    changes = memory.stats()["changes"]
    assert client.delete(f"/v1/users/ana/memories/{item['id']}").json()["deleted"] == 0
    assert memory.stats()["changes"] == changes  # nothing written by the second delete
    assert client.delete("/v1/users/ana/memories/nope").status_code == 404
    kept = memory.add("My sister is Rita.", user_id="ana")[0]

    async def script(mcp):
        assert (await ok(mcp, "delete_memory", item_id=kept.id, user_id="ana"))["deleted"] == 1
        assert (await ok(mcp, "delete_memory", item_id=kept.id, user_id="ana"))["deleted"] == 0
        says = await error(mcp, "get_memory", item_id="nope", user_id="ana")
        assert "no memory item 'nope'" in says and str(memory.path) not in says and "the memory" in says
    run(build_mcp(memory), script)


# -- HTTP: the parser's refusals, deadlines, a connection cap --------------------------------------
@pytest.fixture
def server(program, tmp_path):
    """A real `memarch serve` with short deadlines and a small connection cap: (url, port, process)."""
    port = free_port()
    proc = serve(str(program), "--path", str(tmp_path / "mem"), "--port", str(port), "--no-access-log",
                 "--header-timeout", "2", "--body-timeout", "2", "--max-connections", "400")
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, proc)
        yield url, port, proc
    finally:
        stop(proc)


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL if the server has not exited within 30 s."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def raw(port: int, data: bytes, *, wait: float = 5.0) -> tuple[int, dict, bytes]:
    """Send ``data`` on a new connection; (status, headers, body) of the response (0 if none)."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as s:
        s.sendall(data)
        chunks = []
        try:
            while True:
                got = s.recv(65536)
                if not got:
                    break
                chunks.append(got)
        except socket.timeout:
            pass
    reply = b"".join(chunks)
    if not reply:
        return 0, {}, b""
    head, _, body = reply.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:] if ": " in line)
    return int(lines[0].split()[1]), headers, body


def test_requests_the_parser_refuses_get_the_json_error_shape(server):
    _, port, proc = server
    for garbage in (b"GARBAGE\r\n\r\n", b"GET /health HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
                    b"GET / HTTP/9.9\r\n\r\n", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 40,
                    b"POST /v1/users/ana/search HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 9\r\n\r\n"):
        status, headers, body = raw(port, garbage)
        assert status == 400, (garbage, status, body)
        assert headers["content-type"] == "application/json" and json.loads(body)["error"].startswith("malformed HTTP")
    assert proc.poll() is None


def test_slow_headers_and_a_body_that_never_comes_are_cut_off(server):
    url, port, _ = server
    t0 = time.monotonic()
    status, headers, body = raw(port, b"GET /health HTTP/1.1\r\nHost: x\r\n", wait=10)  # headers never end
    assert status == 408 and json.loads(body)["error"].startswith("request headers not received within 2 s")
    assert 1.5 < time.monotonic() - t0 < 8
    t0 = time.monotonic()
    status, headers, body = raw(port, b"POST /v1/users/ana/search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                                      b"\r\nContent-Length: 100\r\n\r\n{\"query\"", wait=10)  # promises 100 bytes, sends 8
    assert status == 408 and json.loads(body)["error"] == "request body not received within 2 s"
    assert 1.5 < time.monotonic() - t0 < 8
    assert httpx.get(f"{url}/health", timeout=5).status_code == 200


def test_health_answers_beside_300_half_open_connections(server):
    url, port, proc = server
    held = []
    try:
        for i in range(300):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"POST /v1/users/ana/memories HTTP/1.1\r\nHost: x\r\n" if i % 2 else b"GE")
            held.append(s)
        t0 = time.monotonic()
        r = httpx.get(f"{url}/health", timeout=5)
        assert r.status_code == 200 and time.monotonic() - t0 < 1.0
        # over the cap (400): refused at once with a JSON 503, the others unaffected
        more = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(110)]
        held += more
        time.sleep(0.5)
        refused = 0
        for s in more:
            s.settimeout(0.5)
            try:
                got = s.recv(4096)
            except socket.timeout:
                continue
            if got.startswith(b"HTTP/1.1 503"):
                assert b'"error"' in got
                refused += 1
        assert refused >= 9
    finally:
        for s in held:
            s.close()
    time.sleep(0.5)
    assert httpx.get(f"{url}/health", timeout=5).status_code == 200
    assert proc.poll() is None


# -- MCP: JSON-RPC errors on stdio, SIGTERM in both modes ------------------------------------------
def test_mcp_stdio_answers_lines_that_are_not_json_rpc_and_stops_on_sigterm(program, tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "memarch", "serve", str(program), "--path", str(tmp_path / "mem"),
                             "--mcp", "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, bufsize=1)
    try:
        def ask(line: str) -> dict:
            proc.stdin.write(line + "\n")
            proc.stdin.flush()
            return json.loads(proc.stdout.readline())

        parse = ask("{not json")
        assert parse["jsonrpc"] == "2.0" and parse["id"] is None and parse["error"]["code"] == -32700
        assert parse["error"]["message"].startswith("Parse error: not JSON")
        assert ask("this is not json")["error"]["code"] == -32700
        assert ask('{"hello": "world"}')["error"]["code"] == -32600
        assert ask('{"id": 7, "method": 3}') == {"jsonrpc": "2.0", "id": 7,
                                                 "error": {"code": -32600, "message": "Invalid Request: not a JSON-RPC 2.0 message"}}
        init = ask(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
        assert init["id"] == 1 and "result" in init  # still serving
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert "line 1 refused" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_mcp_over_http_stops_cleanly_on_sigterm(program, tmp_path):
    port = free_port()
    proc = serve(str(program), "--path", str(tmp_path / "mem"), "--mcp", "http", "--port", str(port))
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read()
                time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# -- delete means gone ---------------------------------------------------------------------------
def test_deleting_a_user_leaves_no_text_vector_or_query_of_theirs_anywhere(program, tmp_path, monkeypatch):
    """After ``delete(user_id=...)``: no byte of the user's texts, of their items' vectors or of their
    queries' vectors in any file of the memory or of memarch's caches, nor in either process's memos
    (another process sharing the memory forgets them on its next call)."""
    import numpy as np

    from memarch.pipeline.embed import Embedder

    monkeypatch.setenv("MEMARCH_CACHE_DIR", str(tmp_path / "cache"))
    secret, asked = "My zanzibarite vault code is quetzalcoatl-7781.", "where is the xylophonic vault?"
    path = tmp_path / "mem"
    with Memory.load(program, path=path) as memory, Memory.load(program, path=path) as other:
        memory.add([{"role": "user", "content": secret}], user_id="victim")
        memory.add("I like green tea.", user_id="keeper")
        assert memory.search(asked, user_id="victim") and other.search(asked, user_id="victim")
        hash_vectors = Embedder("hash", use_cache=False).embed([secret, asked])
        def distinctive(v: np.ndarray) -> bytes:  # 8 floats from the vector's first non-zero one (it is sparse)
            first = int(np.flatnonzero(v)[0])
            return v.astype(np.float32)[first:first + 8].tobytes()
        traces = [b"zanzibarite", b"xylophonic", "zanzibarite".encode("utf-16-le"), *map(distinctive, hash_vectors)]
        assert memory.delete(user_id="victim") == 1
        assert not any(memory.resources.texts.sizes().values())  # this memory's text memos were emptied
        for m in (memory, other):
            m.search("tea", user_id="keeper")  # the other process catches up: the purge reaches it
            memo = m.resources.embedder._memo
            assert not any(t in memo for t in (asked,)) and not any("zanzibarite" in t for t in memo)
        assert other.search(asked, user_id="victim") == [] and memory.get_all(user_id="victim", include_deleted=True) == []
    files = [p for root in (path, tmp_path / "cache") if root.exists() for p in root.rglob("*") if p.is_file()]
    assert any(p.name == "memory.db" for p in files)
    for p in files:
        data = p.read_bytes()
        for trace in traces:
            assert trace not in data, (p.name, trace[:16])


def test_queries_grow_no_cache_without_bound(program, tmp_path, monkeypatch):
    """A served memory keeps at most `MEMO_SIZE` vectors in RAM and never writes a query's vector:
    200 distinct searches leave the memo at its bound and the database's vector rows at one per text
    its items hold."""
    import sqlite3

    from memarch.app import vectors

    monkeypatch.setattr(vectors, "MEMO_SIZE", 50)
    with Memory.load(program, path=tmp_path / "mem") as memory:
        memory.add(["I moved to Lisbon in May.", "My sister Rita plays the cello."], user_id="ana")
        for i in range(200):
            memory.search(f"question number {i} about anything at all", user_id="ana")
        assert len(memory.resources.embedder._memo) <= 50
        with sqlite3.connect(tmp_path / "mem" / "memory.db") as db:
            texts = {r[0] for r in db.execute("SELECT json_extract(data, '$.text') FROM items "
                                              "WHERE json_extract(data, '$.status') = 'active'")}
            assert db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0] == len(texts) == 2

"""The holes issue 51 (item 5) found in `memarch serve`, each closed and kept closed: bounded request
headers (431), bounded page offsets, path user ids that must be UTF-8, no redirect built from the Host
header, JSON bodies that must be UTF-8, and MCP arguments as strictly typed as the HTTP API's bodies;
then token files that scope every id the user-id rule allows, a log that a flood of bad requests or long
URLs cannot grow without bound, and a per-client connection bound beside the global cap. The servers
and helpers are test_hostile_client.py's (issue 34's holes)."""
from __future__ import annotations

import contextlib
import json
import re
import select
import socket
import subprocess
import sys
import time

import httpx
import pytest
import unicodedata
from fastapi.testclient import TestClient

from memarch import Architecture
from memarch.app.serve.http_api import create_app
from memarch.app.serve.mcp_server import build_mcp, mcp_http_app
from memarch.errors import MemarchError

from test_hostile_client import program, raw, server, stop  # noqa: F401  (fixtures and helpers)
from test_mcp import error, ok, run
from test_serve_cli import free_port

ARCH = Architecture(("turn",), "hybrid", "hybrid", "lightweight")


# -- issue 51: bounded headers, offsets, UTF-8 ids and bodies, no Host in a redirect, strict MCP ----
def send_head(port: int, head: bytes) -> tuple[int, dict, bytes]:
    """Send a request head of any size in pieces, then read the answer (0 if none): the server may
    close, or reset, the connection before the client has sent it all."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        try:
            for i in range(0, len(head), 1 << 16):
                s.sendall(head[i:i + (1 << 16)])
        except OSError:  # refused and closed while sending: the answer was written first
            pass
        chunks = []
        try:
            while got := s.recv(65536):
                chunks.append(got)
        except OSError:  # a reset after the answer (the server closed with unread headers)
            pass
    head_, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    if not head_:
        return 0, {}, b""
    lines = head_.decode("latin-1").split("\r\n")
    return int(lines[0].split()[1]), dict(line.lower().split(": ", 1) for line in lines[1:] if ": " in line), body


def test_request_headers_are_bounded_in_bytes_and_fields(server):
    """1 MiB of headers (one long header, or a thousand of 1 KB) and 150 header fields: a JSON 431
    and the connection closed, before the request reaches any route; 90 fields still pass."""
    url, port, proc = server
    line = b"POST /v1/users/ana/memories HTTP/1.1\r\nHost: x\r\n"
    for head, says in [(line + b"X-Pad: " + b"a" * (1 << 20) + b"\r\n\r\n", "over the limit of 65536 bytes"),
                       (line + b"".join(b"X-Pad-%d: %s\r\n" % (i, b"b" * 1000) for i in range(1000)) + b"\r\n",
                        "over the limit of 65536 bytes"),
                       (line + b"".join(b"X-%d: v\r\n" % i for i in range(150)) + b"\r\n",
                        "more than 100 request header fields")]:
        status, headers, body = send_head(port, head)
        assert status == 431, (head[:80], status, body)
        assert headers["content-type"] == "application/json" and headers["connection"] == "close"
        assert says in json.loads(body)["error"]
    fine = b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(90))
    assert send_head(port, fine + b"Connection: close\r\n\r\n")[0] == 200
    assert httpx.get(f"{url}/v1/users/ana/memories", timeout=5).json()["total"] == 0  # nothing was added
    assert proc.poll() is None


def test_page_offsets_and_limits_are_bounded_422_not_a_500(client, caplog):
    """An offset past any 64-bit integer was echoed into the answer, which orjson refused: a 500 and
    its traceback in the log for one GET."""
    caplog.set_level("ERROR")
    for query, says in [("offset=1000000000000000000000000000000", "query parameter 'offset': Input should be "
                                                                  "less than or equal to 1000000000"),
                        ("offset=" + "9" * 5000, "query parameter 'offset'"),
                        ("offset=-1", "query parameter 'offset'"),
                        ("limit=1000000000000000000000000000000", "query parameter 'limit'")]:
        r = client.get(f"/v1/users/ana/memories?{query}")
        assert r.status_code == 422 and says in r.json()["error"], (query, r.text)
    assert client.get("/v1/users/ana/memories?offset=1000000000").json() == {
        "items": [], "total": 0, "offset": 1000000000, "limit": 100}
    r = client.post("/v1/users/ana/search", json={"query": "x", "limit": 10**30})  # a hot route
    assert r.status_code == 422 and r.json()["error"] == "limit: Input should be less than or equal to 100"
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


def test_a_path_user_id_must_be_utf8_and_is_not_normalised(client, memory):
    """``Jos%E9`` and ``Jos%F1`` (Latin-1 bytes) both decoded to ``Jos\ufffd``: one user for two
    names. Refused (400) before any route; ids are the code points sent: NFC and NFD are two users."""
    for bad in ("Jos%E9", "Jos%F1", "%FF", "ana%C3"):
        for method, route, body in (("POST", "memories", {"messages": "hello"}), ("POST", "search", {"query": "q"}),
                                    ("POST", "context", {"query": "q"}), ("GET", "memories", None),
                                    ("GET", "memories/turn-1", None), ("DELETE", "", None)):
            r = client.request(method, f"/v1/users/{bad}/{route}".rstrip("/"), json=body)
            assert r.status_code == 400, (bad, route, r.text)
            assert r.json()["error"].startswith(f"user_id: not UTF-8 once percent-decoded, got '{bad}'")
    assert client.get("/v1/users/ana/memories/turn%FF").status_code == 400  # any segment of the path
    assert memory.stats()["users"] == 0
    nfc, nfd = unicodedata.normalize("NFC", "José"), unicodedata.normalize("NFD", "José")
    assert client.post("/v1/users/Jos%C3%A9/memories", json={"messages": "I live in Porto."}).status_code == 201
    assert client.post("/v1/users/Jose%CC%81/memories", json={"messages": "I live in Braga."}).status_code == 201
    assert nfc != nfd and memory.stats()["users"] == 2
    assert [r.text.endswith("I live in Porto.") for r in memory.get_all(user_id=nfc)] == [True]
    assert [r.text.endswith("I live in Braga.") for r in memory.get_all(user_id=nfd)] == [True]


def test_no_redirect_is_built_from_the_host_header(client, memory):
    """``/memories/`` was a 307 to ``http://<Host>/...``: any host a client names. No slash redirects."""
    for method, path, body in (("GET", "/v1/users/ana/memories/", None), ("GET", "/v1/stats/", None),
                               ("POST", "/v1/users/ana/search/", {"query": "q"}),
                               ("POST", "/v1/users/ana/context/", {"query": "q"})):
        r = client.request(method, path, json=body, headers={"Host": "evil.example"}, follow_redirects=False)
        assert r.status_code == 404 and "location" not in r.headers, (path, r.status_code, r.headers)
        assert r.json() == {"error": "Not Found"}
    assert client.get("/v1/users/ana/memories", headers={"Host": "evil.example"}).status_code == 200
    with TestClient(mcp_http_app(build_mcp(memory))) as mcp:  # MCP over HTTP too (the SDK's Starlette app)
        r = mcp.get("/mcp/", headers={"Host": "evil.example"}, follow_redirects=False)
        assert r.status_code == 404 and "location" not in r.headers, (r.status_code, r.headers)


def test_json_bodies_must_be_utf8(client, memory):
    """RFC 8259: JSON text is UTF-8. Bytes that are not were a 400 where the docs say 422, and a
    UTF-16 or UTF-32 body was read (``json.loads`` guesses); now 422 on every route, nothing written."""
    add = {"messages": "I moved to Lisbon in May."}
    bodies = [json.dumps(add).encode(codec) for codec in ("utf-16", "utf-16-le", "utf-16-be", "utf-32")]
    bodies += [b'{"messages": "Jos\xe9 moved."}', b'{"messages": "\xff\xfe"}']  # Latin-1, stray bytes
    routes = [("POST", "/v1/users/ana/memories"), ("POST", "/v1/bulk"), ("PUT", "/v1/users/ana/memories/turn-1")]
    for body in bodies:
        for method, path in routes:
            r = client.request(method, path, content=body, headers={"content-type": "application/json"})
            assert r.status_code == 422, (body[:20], path, r.text)
            assert r.json()["error"].startswith("invalid JSON at byte "), r.text
            assert "UTF-8" in r.json()["error"]
    for route in ("search", "context"):  # the hot route and a FastAPI one
        r = client.post(f"/v1/users/ana/{route}", content=json.dumps({"query": "Lisbon"}).encode("utf-16"),
                        headers={"content-type": "application/json"})
        assert r.status_code == 422 and r.json()["error"] == "invalid JSON at byte 0: not UTF-8 (JSON text is " \
                                                             "UTF-8, RFC 8259)"
    assert memory.stats()["users"] == 0
    # UTF-8, with or without the byte order mark RFC 8259 lets a parser ignore
    for body in ('{"messages": "José moved."}'.encode(), b"\xef\xbb\xbf" + '{"messages": "Rita moved."}'.encode()):
        assert client.post("/v1/users/ana/memories", content=body,
                           headers={"content-type": "application/json"}).status_code == 201
    assert memory.stats()["users"] == 1


def test_mcp_arguments_are_strictly_typed_as_over_http(memory, client):
    """``"limit": "3"`` is a 422 over HTTP; the MCP SDK coerced it to 3. Now a tool error too."""
    memory.add("I adopted a cat named Miso.", user_id="ana")
    for limit in ("3", True, 2.0):
        r = client.post("/v1/users/ana/search", json={"query": "cat", "limit": limit})
        assert r.status_code == 422 and r.json()["error"].startswith("limit: Input should be a valid integer")

    async def script(mcp):
        for limit in ("3", True, 2.0):
            says = await error(mcp, "search_memory", query="cat", user_id="ana", limit=limit)
            assert "limit" in says and "valid integer" in says, (limit, says)
        assert "valid string" in await error(mcp, "add_memory", user_id="ana", text=3)
        assert len((await ok(mcp, "search_memory", query="cat", user_id="ana", limit=3))["items"]) == 1
        said = [{"role": "user", "content": "I keep bees."}]
        assert (await ok(mcp, "add_memory", user_id="ana", messages=said))["items"]
    run(build_mcp(memory), script)


# -- issue 51 (item 5, part 2): token-file ids, a bounded log, a per-client connection bound ----------
def test_a_token_file_scopes_every_id_the_user_id_rule_allows(memory, tmp_path):
    """``TOKEN Ana Maria`` was two users, and no line could name the one user ``Ana Maria``; a line
    naming ``María`` stopped the server from starting (the file had to be ASCII). One quoting rule:
    an id that holds a space is a JSON string; UTF-8 ids as written; every id by the user-id rule."""
    from memarch.app.serve.auth import load_token_file

    spaced, accented = "spaced-token-0123456789abcdef", "accented-token-0123456789abcdef"
    tokens = tmp_path / "tokens"
    tokens.write_text(f'{spaced} "Ana Maria"\n{accented} María "say \\"hi\\""\n', encoding="utf-8")
    tokens.chmod(0o600)
    memory.add("I moved to Lisbon in May.", user_id="Ana")
    memory.add("I play the cello.", user_id="Ana Maria")
    with TestClient(create_app(memory, auth=load_token_file(tokens))) as c:
        def status(token: str, user: str) -> int:
            return c.get(f"/v1/users/{user}/memories", headers={"Authorization": f"Bearer {token}"}).status_code

        assert status(spaced, "Ana%20Maria") == 200 and status(spaced, "Ana") == 403 and status(spaced, "Maria") == 403
        r = c.get("/v1/users/Ana%20Maria/memories", headers={"Authorization": f"Bearer {spaced}"})
        assert [i["text"].endswith("I play the cello.") for i in r.json()["items"]] == [True]
        nfc, nfd = unicodedata.normalize("NFC", "María"), unicodedata.normalize("NFD", "María")
        assert status(accented, "Mar%C3%ADa") == 200 and nfc == "María"  # the id as the file wrote it (NFC)
        assert status(accented, "Mari%CC%81a") == 403 and nfd != nfc  # NFD: another user, as in paths
        assert status(accented, "say%20%22hi%22") == 200 and status(accented, "Ana") == 403
    tokens.write_text(f'{spaced} ana "Ana Maria\n')
    with pytest.raises(MemarchError, match=f"token file {tokens}:1: user id 2: an unterminated quote"):
        load_token_file(tokens)


@contextlib.contextmanager
def logged_server(program, tmp_path, *flags: str):
    """A real `memarch serve` whose log (all it writes) goes to a file: (port, the log's path)."""
    port, log = free_port(), tmp_path / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "memarch", "serve", str(program), "--path", str(tmp_path / "mem"),
                                 "--port", str(port), *flags], stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        yield port, log
    finally:
        stop(proc)


def test_the_log_grows_by_a_bounded_line_per_request_and_not_for_a_flood(program, tmp_path):
    """2,000 garbage requests wrote 2,000 lines of uvicorn's "Invalid HTTP request received." (with
    ``--no-access-log`` too); 200 URLs of 60 KB wrote 12 MB of access log. Now uvicorn's warnings
    about bad requests go through the refusals' rate limit (a line a second of each kind, the
    count of the others on the next), and a client's text in a line is cut to 200 characters."""
    garbage = [b"GARBAGE\r\n\r\n", b"GET /health HTTP/1.1\r\nContent-Length: abc\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n",
               b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 40]
    upgrade = b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: upgrade, close\r\nUpgrade: h2c\r\n\r\n"
    with logged_server(program, tmp_path) as (port, log):  # the access log on, as by default
        started = log.read_bytes()
        t0 = time.monotonic()
        for i in range(2000):
            assert raw(port, garbage[i % len(garbage)])[0] == 400
        for _ in range(100):  # served, after uvicorn's warning that it cannot upgrade
            assert raw(port, upgrade)[0] == 200
        took = time.monotonic() - t0
        flood = log.read_bytes()[len(started):].decode().splitlines()
        warnings = [line for line in flood if line.startswith("WARNING")]
        assert len(warnings) <= 4 * (took + 2), (took, warnings[:8])  # 4 kinds, a line a second each at most
        time.sleep(1.1)
        assert raw(port, b"GARBAGE\r\n\r\n")[0] == 400  # its line counts the ones not logged
        time.sleep(0.5)
        invalid = [line for line in log.read_text().splitlines() if "Invalid HTTP request received." in line]
        counted = sum(1 + int(re.search(r"\((\d+) more not logged\)", line).group(1)) if "more not" in line else 1
                      for line in invalid)
        assert counted == 2001 and len(invalid) < 20, invalid

        before = log.stat().st_size
        for i in range(200):
            long = b"/v1/users/ana/memories?q=" + b"a" * 60_000 if i % 2 else b"/v1/users/" + b"b" * 60_000 + b"/memories"
            assert raw(port, b"GET " + long + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")[0] in (400, 422)
        time.sleep(0.5)
        lines = log.read_bytes()[before:].decode().splitlines()
        assert len(lines) == 200 and all(len(line) < 400 for line in lines), lines[:2]
        assert all(re.search(r"\.\.\. \(600\d\d characters\)", line) for line in lines), lines[:2]
    assert log.stat().st_size - before < 200 * 400  # was 12 MB


def test_one_client_cannot_hold_the_connections_every_other_client_needs(program, tmp_path):
    """1,005 half-open connections from one client held ``/health``, and every other client, at 503:
    the connection cap was global. Now one address holds at most ``--max-connections-per-client``
    (here 20 of 50; by default 500 of 1000) and its next ones get the JSON 503; a second client
    (127.0.0.2: Linux routes all of 127.0.0.0/8 to the loopback device) is answered."""
    from memarch.app.serve.server import MAX_CONNECTIONS_PER_CLIENT, config

    assert config(None, max_connections=10).http.max_connections_per_client == 10 < MAX_CONNECTIONS_PER_CLIENT
    try:
        with socket.socket() as probe:
            probe.bind(("127.0.0.2", 0))
    except OSError:
        pytest.skip("127.0.0.2 is not a local address on this machine")

    def health_from(source: str, ask: bool = True) -> tuple[int, bytes]:
        """``/health`` from ``source``; not ``ask``: only connect (a refusal comes unasked, and a
        request the server did not read would make its close a reset)."""
        with socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0)) as s:
            if ask:
                s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            reply = b""
            while got := s.recv(65536):
                reply += got
        head, _, body = reply.partition(b"\r\n\r\n")
        return int(head.split()[1]), body

    with logged_server(program, tmp_path, "--no-access-log", "--header-timeout", "60", "--max-connections", "50",
                       "--max-connections-per-client", "20") as (port, log):
        held, t0 = [], time.monotonic()
        try:
            for _ in range(60):  # more than the whole cap, all from one address
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                s.sendall(b"GE")
                held.append(s)
            refused, deadline = [], time.monotonic() + 10
            while len(refused) < 40 and time.monotonic() < deadline:  # the refused are answered and closed
                refused = select.select(held, [], [], 0.2)[0]
            time.sleep(0.2)
            assert len(select.select(held, [], [], 0)[0]) == 40  # 20 held open: their headers may yet come
            assert all(s.recv(4096).startswith(b"HTTP/1.1 503 ") for s in refused)
            status, body = health_from("127.0.0.2")  # another client: answered
            assert status == 200 and json.loads(body)["status"] == "ok"
            status, body = health_from("127.0.0.1", ask=False)  # the first client's 61st: the JSON 503
            assert status == 503 and json.loads(body) == {
                "error": "the server has 20 connections open from your address; try again later"}
            took = time.monotonic() - t0
        finally:
            for s in held:
                s.close()
        time.sleep(0.5)
        assert health_from("127.0.0.1")[0] == 200  # its connections closed, it is answered again
        refusals = [line for line in log.read_text().splitlines() if "open from that address" in line]
        assert 1 <= len(refusals) <= took + 1, (took, refusals)  # 41 refusals: a line a second at most

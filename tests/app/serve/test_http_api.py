"""`memarch serve`'s HTTP API in-process (FastAPI's TestClient over the ASGI app, hash embedder):
every endpoint's happy path, update keeping lineage, the auth matrix (no / wrong / another user's
token: 401 / 403, nothing read or written), 40 malformed requests (4xx, one line, nothing written,
the server still answers) and the raw body limit (chunked, lying Content-Length)."""
from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest
from fastapi.testclient import TestClient

from memarch import Architecture, Memory
from memarch.app.serve.auth import TokenAuth
from memarch.app.serve.guard import BODY_SCOPED, Guard
from memarch.app.serve.http_api import create_app
from memarch.pipeline.program import MemoryProgram

ARCH = Architecture(("turn",), "hybrid", "hybrid", "lightweight")
ADMIN, BOB, OTHER = "admin-token-0123456789abcdef", "bob-token-0123456789abcdef", "not-a-token-0123456789abcdef"
LIMIT = 4096


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def memory(tmp_path, hash_resources):
    program = tmp_path / "program.json"
    MemoryProgram(ARCH, resources=hash_resources).save(program, include_memory=False)
    with Memory.load(program, path=tmp_path / "mem") as m:
        yield m


@pytest.fixture
def client(memory):
    auth = TokenAuth.from_secrets({ADMIN: None, BOB: ["bob"]})
    with TestClient(create_app(memory, auth=auth, max_body_bytes=LIMIT)) as c:
        yield c


def snapshot(memory) -> tuple:
    """Everything on disk that a write would change."""
    with sqlite3.connect(memory.path / "memory.db") as db:
        return tuple(tuple(db.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall()) for t in ("items", "episodes", "meta"))


def add(client, user: str, messages, token=ADMIN, **extra):
    r = client.post(f"/v1/users/{user}/memories", json={"messages": messages, **extra}, headers=bearer(token))
    assert r.status_code == 201, r.text
    return r.json()["items"]


def test_every_endpoint_happy_path(client, memory):
    assert client.get("/health").json() == {"status": "ok", "program": "turn|hybrid|hybrid|lightweight",
                                            "version": client.get("/health").json()["version"]}
    kept = add(client, "ana", [{"role": "user", "content": "I moved to Lisbon in May."},
                               {"role": "assistant", "content": "How is the bakery job?"}], timestamp="2026-05-03")
    assert [r["source_ids"] for r in kept] == [["e1:0"], ["e1:1"]] and kept[0]["user_id"] == "ana"
    assert set(kept[0]) == {"id", "text", "user_id", "encoder", "score", "episode_id", "source_ids", "event_time",
                            "status", "lineage", "fields"}
    r = client.post("/v1/bulk", headers=bearer(ADMIN), json={"sessions": [
        {"user_id": "ana", "messages": "My sister Rita plays the cello.", "timestamp": "2026-06-01"},
        {"user_id": "bob", "messages": ["I run marathons.", {"role": "user", "content": "Best time 3h05."}]}]})
    assert r.status_code == 201 and r.json()["sessions"] == 2 and [len(x) for x in r.json()["items"]] == [1, 2]
    hits = client.post("/v1/users/ana/search", json={"query": "who plays the cello?", "limit": 2},
                       headers=bearer(ADMIN)).json()["results"]
    assert len(hits) == 2 and "cello" in hits[0]["text"] and hits[0]["score"] >= hits[1]["score"]
    assert {h["user_id"] for h in hits} == {"ana"}
    ctx = client.post("/v1/users/ana/context", json={"query": "cello"}, headers=bearer(ADMIN)).json()
    assert "cello" in ctx["context"]
    page = client.get("/v1/users/ana/memories?offset=1&limit=1", headers=bearer(ADMIN)).json()
    assert page["total"] == 3 and page["offset"] == 1 and len(page["items"]) == 1
    cello = hits[0]["id"]
    got = client.get(f"/v1/users/ana/memories/{cello}", headers=bearer(ADMIN)).json()
    assert got["text"] == hits[0]["text"] and got["score"] is None
    history = client.get(f"/v1/users/ana/memories/{cello}/history", headers=bearer(ADMIN)).json()
    assert history["item_id"] == cello and [e["action"] for e in history["history"]][:2] == ["created", "admitted"]
    source = client.get(f"/v1/users/ana/memories/{cello}/source", headers=bearer(ADMIN)).json()
    assert source["messages"] == [{"turn_id": "e2:0", "speaker": "user", "text": "My sister Rita plays the cello."}]
    r = client.delete(f"/v1/users/ana/memories/{kept[1]['id']}", headers=bearer(ADMIN))
    assert r.json()["deleted"] == 1 and r.json()["verified"] and memory.count(user_id="ana") == 2
    listed = client.get("/v1/users/ana/memories?include_deleted=true", headers=bearer(ADMIN)).json()
    assert listed["total"] == 3 and {x["status"] for x in listed["items"]} == {"active", "deleted"}
    stats = client.get("/v1/stats", headers=bearer(ADMIN)).json()
    assert stats["program"] == "turn|hybrid|hybrid|lightweight"
    gone = client.delete("/v1/users/bob", headers=bearer(ADMIN)).json()
    assert gone["deleted"] == 2 and gone["removed"]["items"] == 2 and gone["verified"]
    assert client.get("/v1/users/bob/remains", headers=bearer(ADMIN)).json()["remains"] is False
    assert memory.count(user_id="bob") == 0 and memory.count(user_id="ana") == 2
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/health", "/v1/bulk", "/v1/stats", "/v1/users/{user_id}", "/v1/users/{user_id}/memories",
            "/v1/users/{user_id}/search", "/v1/users/{user_id}/context", "/v1/users/{user_id}/memories/{item_id}",
            "/v1/users/{user_id}/memories/{item_id}/history", "/v1/users/{user_id}/memories/{item_id}/source",
            "/v1/users/{user_id}/remains"} \
        == set(paths)
    assert client.get("/docs").status_code == 200


@pytest.mark.parametrize("method", ["put", "patch"])
def test_update_supersedes_the_old_item_and_keeps_lineage(client, memory, method):
    old = add(client, "ana", "My favourite colour is green.", timestamp="2026-05-03")[0]
    r = client.request(method, f"/v1/users/ana/memories/{old['id']}", headers=bearer(ADMIN),
                       json={"text": "My favourite colour is blue.", "timestamp": "2026-06-01"})
    assert r.status_code == 200, r.text
    new = r.json()["items"]
    assert len(new) == 1 and "blue" in new[0]["text"]
    assert any(e["action"] == "updated_from" and old["id"] in e["related"] for e in new[0]["lineage"])
    was = client.get(f"/v1/users/ana/memories/{old['id']}", headers=bearer(ADMIN)).json()
    assert was["status"] == "superseded" and "green" in was["text"]
    assert client.get(f"/v1/users/ana/memories/{old['id']}/history",
                      headers=bearer(ADMIN)).json()["history"][-1]["action"] == "superseded_by"
    hits = client.post("/v1/users/ana/search", json={"query": "favourite colour"}, headers=bearer(ADMIN)).json()
    assert [h["id"] for h in hits["results"]] == [new[0]["id"]]
    again = client.put(f"/v1/users/ana/memories/{old['id']}", json={"text": "red"}, headers=bearer(ADMIN))
    assert again.status_code == 404 and "superseded" in again.json()["error"]


class Untouchable:
    """A memory that fails the test if anything reads or writes it."""

    def __init__(self, memory):
        self.program, self.path = memory.program, memory.path

    def __getattr__(self, name):
        raise AssertionError(f"Memory.{name} was called")


REQUESTS = [  # (method, path, json body) of every /v1 route, all for user ana
    ("post", "/v1/users/ana/memories", {"messages": "I moved to Lisbon."}),
    ("get", "/v1/users/ana/memories", None),
    ("post", "/v1/users/ana/search", {"query": "Lisbon"}),
    ("post", "/v1/users/ana/context", {"query": "Lisbon"}),
    ("get", "/v1/users/ana/memories/turn-0123456789abcdef", None),
    ("get", "/v1/users/ana/memories/turn-0123456789abcdef/history", None),
    ("get", "/v1/users/ana/memories/turn-0123456789abcdef/source", None),
    ("put", "/v1/users/ana/memories/turn-0123456789abcdef", {"text": "I moved to Porto."}),
    ("patch", "/v1/users/ana/memories/turn-0123456789abcdef", {"text": "I moved to Porto."}),
    ("delete", "/v1/users/ana/memories/turn-0123456789abcdef", None),
    ("delete", "/v1/users/ana", None),
    ("get", "/v1/users/ana/remains", None),
    ("post", "/v1/bulk", {"sessions": [{"user_id": "bob", "messages": "hi"}, {"user_id": "ana", "messages": "x"}]}),
    ("get", "/v1/stats", None),
]


@pytest.mark.parametrize("who, status", [(None, 401), (OTHER, 401), ("Basic " + ADMIN, 401), (BOB, 403)])
def test_no_wrong_or_another_users_token_reads_and_writes_nothing(memory, who, status):
    memory.add("I moved to Lisbon.", user_id="ana")
    before = snapshot(memory)
    auth = TokenAuth.from_secrets({ADMIN: None, BOB: ["bob"]})
    client = TestClient(create_app(Untouchable(memory), auth=auth))
    headers = {} if who is None else {"Authorization": who if who.startswith("Basic") else f"Bearer {who}"}
    for method, path, body in REQUESTS:
        r = client.request(method, path, json=body, headers=headers)
        assert r.status_code == status, (method, path, r.text)
        assert list(r.json()) == ["error"] and "\n" not in r.json()["error"]
        if status == 401:
            assert r.headers["www-authenticate"].startswith("Bearer")
    assert snapshot(memory) == before and memory.count(user_id="ana") == 1


def test_a_scoped_token_acts_for_its_own_users(client, memory):
    add(client, "bob", "I run marathons.", token=BOB)
    r = client.post("/v1/users/bob/search", json={"query": "marathon"}, headers=bearer(BOB))
    assert r.status_code == 200 and len(r.json()["results"]) == 1
    r = client.post("/v1/bulk", json={"sessions": [{"user_id": "bob", "messages": "I swim."}]}, headers=bearer(BOB))
    assert r.status_code == 201
    assert memory.count(user_id="bob") == 2 and memory.count(user_id="ana") == 0


def test_every_v1_route_is_behind_the_guard(client):
    """A route added later cannot escape the per-user check: it has the user in its path or checks
    the body's users itself (BODY_SCOPED); everything else is for unscoped tokens only."""
    for route in client.app.app.routes:  # the FastAPI app behind the guard
        path = getattr(route, "path", "")
        if path.startswith("/v1"):
            assert path.startswith("/v1/users/{user_id}") or path in BODY_SCOPED or path == "/v1/stats", path


MALFORMED = [  # 40 requests a confused or hostile client sends; (method, path, raw body or json)
    ("post", "/v1/users/ana/memories", b"{bad json"),
    ("post", "/v1/users/ana/memories", b""),
    ("post", "/v1/users/ana/memories", b"null"),
    ("post", "/v1/users/ana/memories", b"[1, 2]"),
    ("post", "/v1/users/ana/memories", b'"just a string"'),
    ("post", "/v1/users/ana/memories", b"\xff\xfe\x00"),
    ("post", "/v1/users/ana/memories", {}),
    ("post", "/v1/users/ana/memories", {"messages": ""}),
    ("post", "/v1/users/ana/memories", {"messages": "   "}),
    ("post", "/v1/users/ana/memories", {"messages": []}),
    ("post", "/v1/users/ana/memories", {"messages": 42}),
    ("post", "/v1/users/ana/memories", {"messages": [{"role": "user"}]}),
    ("post", "/v1/users/ana/memories", {"messages": [{"role": "user", "content": 7}]}),
    ("post", "/v1/users/ana/memories", {"messages": [{"role": "user", "content": "hi", "extra": 1}]}),
    ("post", "/v1/users/ana/memories", {"messages": "hi", "user_id": "bob"}),
    ("post", "/v1/users/ana/memories", {"messages": "hi", "timestamp": "next tuesday"}),
    ("post", "/v1/users/ana/memories", {"messages": "hi", "timestamp": True}),
    ("post", "/v1/users/ana/memories", {"messages": "hi", "timestamp": [2026]}),
    ("post", "/v1/users/ana/memories", {"messages": ["hi", None]}),
    ("post", "/v1/users/ana/memories", {"messages": ["x"] * 1001}),
    ("post", "/v1/users/ana/memories", {"messages": "x" * (LIMIT + 10)}),  # 413
    ("post", "/v1/users/%20/memories", {"messages": "hi"}),
    ("post", "/v1/users/ana/search", {"query": ""}),
    ("post", "/v1/users/ana/search", {"query": "x", "limit": 0}),
    ("post", "/v1/users/ana/search", {"query": "x", "limit": 101}),
    ("post", "/v1/users/ana/search", {"query": "x", "limit": "3"}),
    ("post", "/v1/users/ana/search", {"query": "x", "limit": 2.5}),
    ("post", "/v1/users/ana/search", {"query": ["x"]}),
    ("post", "/v1/users/ana/context", {"q": "x"}),
    ("get", "/v1/users/ana/memories?limit=0", None),
    ("get", "/v1/users/ana/memories?offset=-1", None),
    ("get", "/v1/users/ana/memories?includ_deleted=1", None),
    ("put", "/v1/users/ana/memories/turn-0123456789abcdef", {"text": "x"}),  # 404: no such item
    ("put", "/v1/users/ana/memories/ITEM", {"text": ""}),
    ("patch", "/v1/users/ana/memories/ITEM", {"txt": "x"}),
    ("delete", "/v1/users/ana/memories/turn-0123456789abcdef", None),
    ("post", "/v1/bulk", {"sessions": []}),
    ("post", "/v1/bulk", {"sessions": [{"user_id": "ana", "messages": "ok"}, {"user_id": "ana", "messages": ""}]}),
    ("post", "/v1/bulk", {"sessions": [{"messages": "no user"}]}),
    ("get", "/v1/users/ana/nowhere", None),
]


def test_malformed_requests_are_4xx_with_one_line_and_write_nothing(client, memory):
    assert len(MALFORMED) == 40
    item = add(client, "ana", "I moved to Lisbon.", timestamp="2026-05-03")[0]["id"]
    before = snapshot(memory)
    for method, path, body in MALFORMED:
        path = path.replace("ITEM", item)
        kw = {"content": body, "headers": {**bearer(ADMIN), "Content-Type": "application/json"}} \
            if isinstance(body, bytes) else {"json": body, "headers": bearer(ADMIN)}
        r = client.request(method, path, **kw)
        assert 400 <= r.status_code < 500, (method, path, body, r.status_code, r.text)
        error = r.json()["error"]
        assert isinstance(error, str) and error and "\n" not in error and len(error) < 300, error
        assert str(memory.path) not in error
    assert snapshot(memory) == before
    assert client.get("/health").json()["status"] == "ok"
    assert len(add(client, "ana", "Still here.")) == 1


def test_the_errors_name_what_is_wrong(client):
    def error(method, path, **kw):
        return client.request(method, path, headers={**bearer(ADMIN), **kw.pop("headers", {})}, **kw).json()["error"]
    assert error("post", "/v1/users/ana/memories", content=b"{bad", headers={"Content-Type": "application/json"}) \
        .startswith("invalid JSON at byte 1")
    assert error("post", "/v1/users/ana/memories", json={"messages": "hi", "user": "x"}) == \
        "user: Extra inputs are not permitted"
    assert error("post", "/v1/users/ana/memories", json={"messages": [{"role": "user"}]}) == \
        "messages: message 0: content: Field required"
    assert error("post", "/v1/users/ana/search", json={"query": "x", "limit": 101}) == \
        "limit: Input should be less than or equal to 100"
    assert error("get", "/v1/users/ana/memories?includ_deleted=1") == \
        "query parameter 'includ_deleted': unknown query parameter"
    assert error("post", "/v1/users/ana/memories", json={"messages": "x" * LIMIT}) == \
        f"request body over the limit of {LIMIT} bytes"


def test_a_chunked_body_over_the_limit_is_413(client, memory):
    def chunks():
        yield b'{"messages": "'
        for _ in range(LIMIT // 100 + 2):
            yield b"x" * 100
        yield b'"}'
    r = client.post("/v1/users/ana/memories", content=chunks(),
                    headers={**bearer(ADMIN), "Content-Type": "application/json"})
    assert r.status_code == 413 and memory.count(user_id="ana") == 0


def test_a_lying_content_length_does_not_get_past_the_limit():
    """The guard counts the bytes that arrive, whatever ``Content-Length`` claimed."""
    reached = []

    async def app(scope, receive, send):
        reached.append(await receive())

    async def call() -> list[dict]:
        sent, parts = [], [{"type": "http.request", "body": b"x" * 1000, "more_body": True} for _ in range(5)]
        parts.append({"type": "http.request", "body": b"", "more_body": False})

        async def receive():
            return parts.pop(0)

        async def send(message):
            sent.append(message)
        scope = {"type": "http", "path": "/v1/users/ana/memories", "headers": [(b"content-length", b"10")]}
        await Guard(app, auth=None, max_body_bytes=2500)(scope, receive, send)
        return sent

    sent = asyncio.run(call())
    assert sent[0]["status"] == 413 and not reached
    assert json.loads(sent[1]["body"]) == {"error": "request body over the limit of 2500 bytes"}


def test_without_tokens_everything_is_open(memory):
    """Loopback without --token-file: no Authorization needed (the CLI refuses other addresses)."""
    client = TestClient(create_app(memory))
    r = client.post("/v1/users/ana/memories", json={"messages": "hi there"})
    assert r.status_code == 201 and client.get("/v1/stats").status_code == 200

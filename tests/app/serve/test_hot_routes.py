"""The hot routes (search and add past FastAPI, `hot_routes.HotRoutes`) answer exactly as the API's
FastAPI routes do: the same status, headers that matter and body bytes for valid requests and for
every malformed one of a corpus (bad JSON, wrong types, unknown fields and query parameters, other
content types, user ids against the rule, tokens scoped to another user), and the same state after."""
from __future__ import annotations

import json

from fastapi.testclient import TestClient

from memarch import Architecture, Memory
from memarch.app.serve.auth import TokenAuth
from memarch.app.serve.http_api import create_app
from memarch.pipeline.program import MemoryProgram

ARCH = Architecture(("turn",), "hybrid", "hybrid", "lightweight")
ADMIN, BOB = "admin-token-0123456789abcdef", "bob-token-0123456789abcdef"

GOOD = [
    ("POST", "/v1/users/ana/memories", {"json": {"messages": "I moved to Lisbon in May.", "timestamp": "2026-05-03"}}, ADMIN),
    ("POST", "/v1/users/ana/memories", {"json": {"messages": [{"role": "user", "content": "My sister Rita plays the cello."},
                                                              "And I bake bread."], "timestamp": 1.7e9}}, ADMIN),
    ("POST", "/v1/users/bob/memories", {"json": {"messages": {"role": "user", "name": "Bob", "content": "I keep bees."}}}, BOB),
    ("POST", "/v1/users/ana/search", {"json": {"query": "who plays the cello?"}}, ADMIN),
    ("POST", "/v1/users/ana/search", {"json": {"query": "Lisbon", "limit": 1}}, ADMIN),
    ("POST", "/v1/users/bob/search", {"json": {"query": "bees"}}, BOB),
    ("POST", "/v1/users/Ana%20Mar%C3%ADa/search", {"json": {"query": "anything"}}, ADMIN),
    ("POST", "/v1/users/ana/search", {"content": b'{"query": "x"}', "headers": {"content-type": "application/vnd.x+json"}}, ADMIN),
    ("POST", "/v1/users/ana/search", {"content": b'{"query": "x"}', "headers": {"content-type": "application/json; charset=utf-8"}}, ADMIN),
]
BAD = [
    ("POST", "/v1/users/ana/search", {"content": b"{not json", "headers": {"content-type": "application/json"}}, ADMIN),
    ("POST", "/v1/users/ana/search", {"content": b'{"query": "x",}', "headers": {"content-type": "application/json"}}, ADMIN),
    ("POST", "/v1/users/ana/search", {"content": b"", "headers": {"content-type": "application/json"}}, ADMIN),
    ("POST", "/v1/users/ana/search", {"content": b"[1, 2]", "headers": {"content-type": "application/json"}}, ADMIN),
    ("POST", "/v1/users/ana/search", {"content": b'"just a string"', "headers": {"content-type": "application/json"}}, ADMIN),
    ("POST", "/v1/users/ana/search", {"json": {"query": ""}}, ADMIN),
    ("POST", "/v1/users/ana/search", {"json": {"query": "   "}}, ADMIN),
    ("POST", "/v1/users/ana/search", {"json": {"query": 3}}, ADMIN),
    ("POST", "/v1/users/ana/search", {"json": {"query": "x", "limit": 0}}, ADMIN),
    ("POST", "/v1/users/ana/search", {"json": {"query": "x", "limit": "5"}}, ADMIN),
    ("POST", "/v1/users/ana/search", {"json": {"query": "x", "limit": True}}, ADMIN),
    ("POST", "/v1/users/ana/search", {"json": {"query": "x", "limt": 5}}, ADMIN),
    ("POST", "/v1/users/ana/search", {"json": {}}, ADMIN),
    ("POST", "/v1/users/ana/search", {"json": {"query": "x" * 100_001}}, ADMIN),
    ("POST", "/v1/users/ana/search?include_deleted=1", {"json": {"query": "x"}}, ADMIN),
    ("POST", "/v1/users/ana/search", {"content": b'{"query": "x"}', "headers": {"content-type": "text/plain"}}, ADMIN),
    ("POST", "/v1/users/ana/search", {"content": b'{"query": "x"}'}, ADMIN),  # no content type
    ("POST", "/v1/users/ana/search", {"content": b'{"query": "\xff\xfe"}', "headers": {"content-type": "application/json"}}, ADMIN),
    ("POST", "/v1/users/ana/memories", {"json": {}}, ADMIN),
    ("POST", "/v1/users/ana/memories", {"json": {"messages": []}}, ADMIN),
    ("POST", "/v1/users/ana/memories", {"json": {"messages": ""}}, ADMIN),
    ("POST", "/v1/users/ana/memories", {"json": {"messages": [{"role": "user"}]}}, ADMIN),
    ("POST", "/v1/users/ana/memories", {"json": {"messages": [{"content": "x", "mood": "happy"}]}}, ADMIN),
    ("POST", "/v1/users/ana/memories", {"json": {"messages": [3]}}, ADMIN),
    ("POST", "/v1/users/ana/memories", {"json": {"messages": "x", "timestamp": "not a date"}}, ADMIN),
    ("POST", "/v1/users/ana/memories", {"json": {"messages": "x", "timestamp": [1]}}, ADMIN),
    ("POST", "/v1/users/ana/memories", {"json": {"messages": "x", "extra": 1}}, ADMIN),
    ("POST", "/v1/users/ana/memories", {"json": {"messages": ["x"] * 1001}}, ADMIN),
    ("POST", "/v1/users/ana/search", {"content": '{"query": "x"}'.encode("utf-16"), "headers": {"content-type": "application/json"}}, ADMIN),
    ("POST", "/v1/users/ana/memories", {"content": '{"messages": "x"}'.encode("utf-16-le"), "headers": {"content-type": "application/json"}}, ADMIN),
    ("POST", "/v1/users/ana/search", {"json": {"query": "x", "limit": 10**30}}, ADMIN),
    ("POST", "/v1/users/Jos%E9/search", {"json": {"query": "x"}}, ADMIN),
    ("POST", "/v1/users/nul%00/search", {"json": {"query": "x"}}, ADMIN),
    ("POST", "/v1/users/" + "x" * 201 + "/memories", {"json": {"messages": "x"}}, ADMIN),
    ("POST", "/v1/users/%20/memories", {"json": {"messages": "x"}}, ADMIN),
    ("POST", "/v1/users/ana/search", {"json": {"query": "x"}}, BOB),  # a token scoped to bob
    ("POST", "/v1/users/ana/memories", {"json": {"messages": "x"}}, BOB),
    ("POST", "/v1/users/ana/search", {"json": {"query": "x"}}, None),  # no token
    ("POST", "/v1/users/ana/search", {"json": {"query": "x"}}, "wrong-token-0123456789abcdef"),
    # two faults at once: refused for the one FastAPI checks first
    ("POST", "/v1/users/nul%00/search?x=1", {"json": {"query": "x"}}, ADMIN),
    ("POST", "/v1/users/nul%00/search", {"content": b"{bad", "headers": {"content-type": "application/json"}}, ADMIN),
    ("POST", "/v1/users/ana/search?x=1", {"content": b"{bad", "headers": {"content-type": "application/json"}}, ADMIN),
    ("POST", "/v1/users/nul%00/search", {"json": {"query": 3}}, ADMIN),
    ("POST", "/v1/users/ana/search?x=1", {"json": {"query": 3}}, ADMIN),
    ("POST", "/v1/users/nul%00/memories", {"content": b"x", "headers": {"content-type": "text/plain"}}, ADMIN),
    ("POST", "/v1/users/nul%00/search", {"content": b'{"query": "\xff\xfe"}', "headers": {"content-type": "application/json"}}, ADMIN),
    ("POST", "/v1/users/ana/memories?b=1&a=2", {"json": {"messages": "x"}}, ADMIN),
    ("POST", "/v1/users/ana/search", {"content": b"null", "headers": {"content-type": "application/json"}}, ADMIN),
]


def _answers(memory, hot: bool) -> list[tuple]:
    auth = TokenAuth.from_secrets({ADMIN: None, BOB: ["bob"]})
    out = []
    with TestClient(create_app(memory, auth=auth, hot=hot)) as client:
        for method, path, kwargs, token in GOOD + BAD:
            headers = {**kwargs.get("headers", {}), **({"Authorization": f"Bearer {token}"} if token else {})}
            r = client.request(method, path, **{k: v for k, v in kwargs.items() if k != "headers"}, headers=headers)
            out.append((path, r.status_code, r.headers.get("content-type"), r.content))
    return out


def test_hot_routes_answer_byte_for_byte_as_fastapi(tmp_path, hash_resources):
    program = tmp_path / "program.json"
    MemoryProgram(ARCH, resources=hash_resources).save(program, include_memory=False)
    with Memory.load(program, path=tmp_path / "slow") as slow, Memory.load(program, path=tmp_path / "hot") as fast:
        want, got = _answers(slow, hot=False), _answers(fast, hot=True)
        for (path, *w), (_, *g) in zip(want, got):
            assert g == w, (path, w, g)
        assert [a[1] for a in want[:len(GOOD)]] == [201, 201, 201, 200, 200, 200, 200, 200, 200]
        assert all(400 <= a[1] < 500 for a in want[len(GOOD):])
        assert slow.stats()["items"] == fast.stats()["items"]
        assert [r.to_dict() for r in slow.get_all(user_id="ana")] == [r.to_dict() for r in fast.get_all(user_id="ana")]


def test_the_hot_routes_are_taken(tmp_path, hash_resources):
    """Not only equal: the search and add of `create_app` go past FastAPI's routing (its app unused)."""
    program = tmp_path / "program.json"
    MemoryProgram(ARCH, resources=hash_resources).save(program, include_memory=False)
    calls = []
    with Memory.load(program, path=tmp_path / "m") as memory:
        app = create_app(memory)
        fastapi_app = app.app

        async def spy(scope, receive, send):
            if scope["type"] == "http":
                calls.append(scope["path"])
            await fastapi_app(scope, receive, send)
        app.app = spy
        with TestClient(app) as client:
            assert client.post("/v1/users/ana/memories", json={"messages": "hello there"}).status_code == 201
            assert json.loads(client.post("/v1/users/ana/search", json={"query": "hello"}).content)["results"]
            assert client.get("/v1/users/ana/memories").status_code == 200  # the spy sees FastAPI's routes
    assert calls == ["/v1/users/ana/memories"]

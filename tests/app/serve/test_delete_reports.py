"""``DELETE /v1/users/U[/memories/I]`` answers what it removed and the checks that nothing is left
(issue 51, item 4): the counts match the rows the database held before, MCP's ``delete_memory``
answers the same report, the OpenAPI schema documents it, a leftover is a 500 in the one error
shape with a log line, and ``GET /v1/users/U/remains`` tells what a server process still holds."""
from __future__ import annotations

import json
import logging
import sqlite3

from fastapi.testclient import TestClient

from memarch import Architecture, Memory
from memarch.app import memory as memory_module
from memarch.app.deletion import Check
from memarch.app.serve.http_api import create_app
from memarch.app.serve.mcp_server import build_mcp
from test_mcp import ok, run

ARCH = Architecture(("turn",), "hybrid", "hybrid", "lightweight")
REPORT = {"deleted", "user_id", "item_id", "tombstoned", "removed", "verified", "checks"}


def rows_of(memory: Memory, user: str) -> dict[str, int]:
    with sqlite3.connect(memory.path / "memory.db") as db:
        def count(table: str) -> int:
            return db.execute(f"SELECT COUNT(*) FROM {table} WHERE namespace = ?", (user,)).fetchone()[0]
        episodes = [json.loads(d) for (d,) in db.execute("SELECT data FROM episodes WHERE namespace = ?", (user,))]
        return {"items": count("items"), "episodes": len(episodes), "messages": sum(len(e["turns"]) for e in episodes),
                "vectors": count("vectors"), "users": count("namespaces")}


def add(client, user: str, messages) -> list[dict]:
    r = client.post(f"/v1/users/{user}/memories", json={"messages": messages})
    assert r.status_code == 201, r.text
    return r.json()["items"]


def test_delete_reports_match_what_the_database_held_before(client, memory):
    add(client, "bob", [{"role": "user", "content": "I run marathons."}, {"role": "assistant", "content": "Wow."}])
    add(client, "bob", "My best time is 3h05.")
    kept = add(client, "bob", "I train on Sundays.")
    add(client, "ana", "I like green tea.")
    before = rows_of(memory, "bob")

    r = client.delete(f"/v1/users/bob/memories/{kept[0]['id']}")
    assert r.status_code == 200 and set(r.json()) == REPORT
    item = r.json()
    assert (item["deleted"], item["tombstoned"], item["item_id"], item["verified"]) == (1, 1, kept[0]["id"], True)
    assert item["removed"] == {"items": 0, "episodes": 0, "messages": 0, "vectors": 1, "users": 0}
    assert rows_of(memory, "bob") == {**before, "vectors": before["vectors"] - 1}
    before = rows_of(memory, "bob")

    r = client.delete("/v1/users/bob")
    assert r.status_code == 200 and set(r.json()) == REPORT
    user = r.json()
    assert user["removed"] == before and user["deleted"] == before["items"] == 4 and before["messages"] == 4
    assert user["verified"] and user["item_id"] is None and all(c["left"] == 0 for c in user["checks"])
    assert {c["where"] for c in user["checks"]} == {"database", "process"}
    assert rows_of(memory, "bob") == dict.fromkeys(before, 0) and rows_of(memory, "ana")["items"] == 1
    remains = client.get("/v1/users/bob/remains").json()
    assert remains["remains"] is False and remains["user_id"] == "bob" and isinstance(remains["pid"], int)
    assert client.get("/v1/users/ana/remains").json()["remains"] is True

    r = client.delete("/v1/users/bob")  # an unknown (or deleted) user: 200, nothing removed, as before
    assert r.status_code == 200 and r.json()["deleted"] == 0 and r.json()["verified"]
    assert client.delete("/v1/users/ana/memories/nope").status_code == 404


def test_the_openapi_schema_documents_the_report(client):
    spec = client.get("/openapi.json").json()
    answer = spec["paths"]["/v1/users/{user_id}"]["delete"]["responses"]["200"]["content"]["application/json"]
    assert answer["schema"]["$ref"].endswith("/Deleted")
    schemas = spec["components"]["schemas"]
    assert set(schemas["Deleted"]["properties"]) == REPORT
    assert set(schemas["Removed"]["properties"]) == {"items", "episodes", "messages", "vectors", "users"}
    assert set(schemas["Check"]["properties"]) == {"where", "what", "left"}
    assert set(schemas["Remains"]["properties"]) == {"user_id", "pid", "remains", "checks"}


def test_mcp_delete_memory_answers_the_http_report(client, memory):
    first, second = add(client, "ana", "I like green tea.")[0], add(client, "ana", "I like black coffee.")[0]
    over_http = client.delete(f"/v1/users/ana/memories/{first['id']}").json()

    async def script(mcp):
        over_mcp = await ok(mcp, "delete_memory", item_id=second["id"], user_id="ana")
        assert set(over_mcp) == REPORT and over_mcp["item_id"] == second["id"]
        assert {k: v for k, v in over_mcp.items() if k != "item_id"} == \
            {k: v for k, v in over_http.items() if k != "item_id"}
    run(build_mcp(memory), script)


def test_a_deletion_that_leaves_something_is_a_500_with_a_log_line(client, memory, monkeypatch, caplog):
    add(client, "bob", "I run marathons.")
    monkeypatch.setattr(memory_module, "user_held", lambda program, ns, texts=None: [Check("process", "a cache", 1)])
    with caplog.at_level(logging.ERROR, logger="memarch.app.serve.errors"):
        r = client.delete("/v1/users/bob")
    assert r.status_code == 500 and list(r.json()) == ["error"]
    says = r.json()["error"]
    assert "deleting user 'bob' left something behind (process: a cache: 1)" in says and "\n" not in says
    assert str(memory.path) not in says
    lines = [rec.getMessage() for rec in caplog.records if rec.levelno == logging.ERROR]
    assert any(line.startswith("DELETE /v1/users/bob failed: deleting user 'bob'") for line in lines)
    assert rows_of(memory, "bob")["items"] == 0  # the database's deletion was committed
    assert client.get("/health").status_code == 200  # and the server goes on


def test_remains_tells_what_another_process_sharing_the_memory_holds(client, memory, program_file):
    with Memory.load(program_file, path=memory.path) as other, TestClient(create_app(other)) as elsewhere:
        add(client, "bob", "I run marathons.")
        assert elsewhere.get("/v1/users/bob/remains").json()["remains"] is True  # caught up: it holds bob
        assert client.delete("/v1/users/bob").json()["verified"]
        answer = elsewhere.get("/v1/users/bob/remains").json()  # the purge reaches it at this call
        assert answer["remains"] is False and all(c["left"] == 0 for c in answer["checks"])

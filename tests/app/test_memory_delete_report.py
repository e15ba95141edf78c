"""Deletes that report and verify (issue 51, item 4), on SQLite and PostgreSQL: a user's and an
item's `DeletionReport` match the rows the database held before (counted here, by SQL of the
tests' own), nothing of them is left afterwards (the database, this process, another process
sharing the memory once caught up), deleting again or an unknown user is as before, and a check
that finds something left is an error (a database leftover rolls the deletion back)."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest

from memarch import Architecture, MemarchError, Memory
from memarch.app import memory as memory_module
from memarch.app.deletion import Check, DeletionUnverified

ARCH = Architecture(("turn",), "hybrid", "hybrid", "lightweight")
ZERO = {"items": 0, "episodes": 0, "messages": 0, "vectors": 0, "users": 0}


def rows_of(mem_path, user: str) -> dict[str, int]:
    """What the database holds of ``user``, counted straight from its tables (not through memarch)."""
    if str(mem_path).startswith("postgresql"):
        import psycopg

        parts = urlsplit(str(mem_path))
        query = dict(parse_qsl(parts.query))
        schema = query.pop("schema")
        conn = psycopg.connect(urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), "")),
                               autocommit=True)
        conn.execute(f'SET search_path TO "{schema}"')
        mark = "%s"
    else:
        conn, mark = sqlite3.connect(Path(mem_path) / "memory.db"), "?"
    try:
        def count(table: str) -> int:
            return conn.execute(f"SELECT COUNT(*) FROM {table} WHERE namespace = {mark}", (user,)).fetchone()[0]
        episodes = [json.loads(d) for (d,) in conn.execute(f"SELECT data FROM episodes WHERE namespace = {mark}",
                                                           (user,)).fetchall()]
        return {"items": count("items"), "episodes": len(episodes),
                "messages": sum(len(e.get("turns", [])) + len(e.get("steps", [])) for e in episodes),
                "vectors": count("vectors"), "users": count("namespaces")}
    finally:
        conn.close()


def fill(memory: Memory, user: str) -> None:
    """Three adds (four messages), a repeat merged away (superseded) and an item tombstoned."""
    memory.add([{"role": "user", "content": f"{user} moved to Lisbon in May."},
                {"role": "assistant", "content": "How is the bakery job?"}], user_id=user, timestamp="2026-05-03")
    memory.add(f"{user} adopted a cat named Miso.", user_id=user, timestamp="2026-05-04")
    memory.add(f"{user} adopted a cat named Miso.", user_id=user, timestamp="2026-05-04")
    bakery = memory.search("bakery job", user_id=user, limit=1)[0]
    memory.delete(user_id=user, item_id=bakery.id)


def test_a_users_delete_reports_what_the_database_held_and_leaves_nothing(program_file, mem_path):
    memory = Memory.load(program_file, path=mem_path)
    other = Memory.load(program_file, path=mem_path)  # a second process sharing the memory
    fill(memory, "bob")
    fill(memory, "ana")
    assert other.search("cat", user_id="bob")  # it holds bob's items
    before, ana = rows_of(mem_path, "bob"), rows_of(mem_path, "ana")
    statuses = {r.status for r in memory.get_all(user_id="bob", include_deleted=True)}
    assert statuses == {"active", "superseded", "deleted"} and before["messages"] == 4 and before["episodes"] == 3
    assert before["items"] == len(memory.get_all(user_id="bob", include_deleted=True))

    report = memory.delete_verified(user_id="bob")
    assert report.to_dict()["removed"] == before and report.deleted == before["items"] and report.tombstoned == 0
    assert report.verified and report.user_id == "bob" and report.item_id is None
    assert {(c.where, c.what) for c in report.checks} >= {
        ("database", "rows of items"), ("database", "rows of episodes"), ("database", "rows of vectors"),
        ("database", "rows of namespaces"), ("process", "records of the user in the store (any status)"),
        ("process", "vectors of the user's texts in the embedder's memo")}
    assert all(c.left == 0 for c in report.checks)

    assert rows_of(mem_path, "bob") == ZERO and rows_of(mem_path, "ana") == ana  # gone; the other user untouched
    assert memory.get_all(user_id="bob", include_deleted=True) == [] and memory.search("cat", user_id="bob") == []
    assert all(c.left == 0 for c in memory.remains(user_id="bob"))
    assert all(c.left == 0 for c in other.remains(user_id="bob"))  # the other process, once caught up
    assert any(c.left for c in other.remains(user_id="ana"))  # and ana's items are still there
    assert other.search("cat", user_id="bob") == []


def test_an_items_delete_reports_the_tombstone_and_its_vector(program_file, mem_path):
    memory = Memory.load(program_file, path=mem_path)
    fill(memory, "ana")
    cat = memory.search("cat named Miso", user_id="ana", limit=1)[0]
    before = rows_of(mem_path, "ana")
    changes = memory.stats()["changes"]

    report = memory.delete_verified(user_id="ana", item_id=cat.id)
    assert report.to_dict() | {"checks": None} == {
        "deleted": 1, "user_id": "ana", "item_id": cat.id, "tombstoned": 1, "verified": True, "checks": None,
        "removed": {**ZERO, "vectors": 1}}
    assert {(c.where, c.what) for c in report.checks} == {
        ("database", "active rows of the item"), ("database", "vectors of the item's text"),
        ("process", "the item, active in the store"), ("process", "the item among the dense index's hits for its text")}
    after = rows_of(mem_path, "ana")
    assert after == {**before, "vectors": before["vectors"] - 1}  # the row stays (a tombstone), its vector goes
    assert memory.get(cat.id, user_id="ana").status == "deleted"
    assert cat.id not in [h.id for h in memory.search("cat named Miso", user_id="ana", limit=10)]

    again = memory.delete_verified(user_id="ana", item_id=cat.id)  # as before: 0, nothing written
    assert again.deleted == 0 and again.removed.to_dict() == ZERO and again.verified
    assert memory.stats()["changes"] == changes + 1 and rows_of(mem_path, "ana") == after
    with pytest.raises(MemarchError, match="no memory item 'nope' of user 'ana'"):
        memory.delete_verified(user_id="ana", item_id="nope")


def test_deleting_an_unknown_user_reports_nothing_removed(program_file, mem_path):
    memory = Memory.load(program_file, path=mem_path)
    memory.add("I like green tea.", user_id="ana")
    report = memory.delete_verified(user_id="nobody")
    assert report.deleted == 0 and report.removed.to_dict() == ZERO and report.verified
    assert memory.delete(user_id="nobody") == 0 and memory.count(user_id="ana") == 1


def test_a_database_leftover_rolls_the_deletion_back(program_file, mem_path, monkeypatch):
    memory = Memory.load(program_file, path=mem_path)
    fill(memory, "bob")
    before = rows_of(mem_path, "bob")
    real = type(memory.db).leftovers
    monkeypatch.setattr(type(memory.db), "leftovers", lambda db, ns: {**real(db, ns), "items": 1})
    with pytest.raises(DeletionUnverified, match="rows of items: 1.*rolled back") as caught:
        memory.delete_verified(user_id="bob")
    assert caught.value.committed is False
    assert rows_of(mem_path, "bob") == before and memory.search("cat", user_id="bob")  # nothing was deleted


def test_a_process_leftover_is_an_error_after_the_commit(program_file, mem_path, monkeypatch):
    memory = Memory.load(program_file, path=mem_path)
    fill(memory, "bob")
    monkeypatch.setattr(memory_module, "user_held", lambda program, ns, texts=None: [Check("process", "a cache", 2)])
    with pytest.raises(DeletionUnverified, match="process: a cache: 2.*committed") as caught:
        memory.delete_verified(user_id="bob")
    assert caught.value.committed is True and rows_of(mem_path, "bob") == ZERO

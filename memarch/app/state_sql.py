"""The statements a `Memory`'s state needs, written once for both of its databases: `MemoryDB`
(SQLite) and `PostgresDB` (PostgreSQL) subclass `StateSQL` and bring the connection, the
transactions, the schema and what differs (placeholders, the first-written order, file sizes)."""
from __future__ import annotations

import json
from typing import Any

from memarch.errors import DataError

FORMAT = "memarch.memory/1"  # both databases: one format


class StateSQL:
    """Items (one JSON row per `MemoryItem`, keyed by namespace and id), the raw episodes that were
    added, the users' text vectors, and two counters: ``changes`` (every committed write) and
    ``purges`` (user deletions). Subclasses set `PLACEHOLDER` and `ORDER` and give ``conn``, the
    connection of the transaction in progress (``write()`` / ``read()``)."""

    PLACEHOLDER = "?"  # the driver's parameter marker; statements below are written with "?"
    ORDER = "rowid"  # the column that orders items as they were first written (kept on update)
    # SQLite, asked for the rows above a ``seq`` in rowid order, scanned the whole table in rowid
    # order rather than sort the few rows the ``seq`` index finds: 47 ms at 100k items for one row
    SEQ_INDEX = "INDEXED BY items_seq"

    conn: Any
    path: Any

    def _sql(self, statement: str) -> str:
        return statement if self.PLACEHOLDER == "?" else statement.replace("?", self.PLACEHOLDER)

    def _run(self, statement: str, params: tuple | list = ()) -> Any:
        return self.conn.execute(self._sql(statement), params)

    def _run_many(self, statement: str, rows: list) -> None:
        if rows:
            self.conn.cursor().executemany(self._sql(statement), rows)

    def _initialise(self, schema: str) -> None:
        """Inside the first write: create the tables (``schema``'s statements), then check or set
        the format and the counters."""
        for stmt in filter(str.strip, schema.split(";")):
            self.conn.execute(stmt)
        fmt = self.get_meta("format")
        if fmt is None:
            if self._run("SELECT count(*) FROM items").fetchone()[0]:
                raise DataError(f"{self.path}: has items but no format; not a memarch memory")
            self.set_meta("format", FORMAT)
            self.set_meta("changes", 0)
            self.set_meta("purges", 0)
        elif fmt != FORMAT:
            raise DataError(f"{self.path}: memory format {fmt!r}, this memarch reads {FORMAT!r}")

    # -- meta and counters -------------------------------------------------------------------------
    def get_meta(self, key: str) -> Any:
        row = self._run("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def set_meta(self, key: str, value: Any) -> None:
        self._run("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                  (key, json.dumps(value, sort_keys=True)))

    def counters(self) -> tuple[int, int]:
        """(changes, purges) as committed now: one indexed read, cheap enough before every search."""
        rows = dict(self._run("SELECT key, value FROM meta WHERE key IN ('changes', 'purges')").fetchall())
        return int(rows.get("changes", 0)), int(rows.get("purges", 0))

    def bump(self, *, purge: bool = False) -> int:
        """Inside `write`: the next change number (and one more purge when ``purge``)."""
        changes, purges = self.counters()
        self.set_meta("changes", changes + 1)
        if purge:
            self.set_meta("purges", purges + 1)
        return changes + 1

    # -- items -------------------------------------------------------------------------------------
    def upsert(self, rows: list[tuple[str, str, dict]], seq: int) -> None:
        self._run_many("INSERT INTO items(namespace, id, seq, data) VALUES (?, ?, ?, ?) ON CONFLICT(namespace, id) "
                       "DO UPDATE SET seq = excluded.seq, data = excluded.data",
                       [(ns, iid, seq, json.dumps(data, ensure_ascii=False, default=str)) for ns, iid, data in rows])

    def items(self, since: int = 0) -> list[dict]:
        """Items changed after change ``since`` (all with 0), in first-written order; found through
        the ``seq`` index, so a catch-up reads the few changed rows, not the table."""
        hint = self.SEQ_INDEX if since else ""
        cur = self._run(f"SELECT data FROM items {hint} WHERE seq > ? ORDER BY {self.ORDER}", (since,))
        return [json.loads(data) for (data,) in cur]

    def find(self, item_id: str, namespace: str | None = None) -> list[dict]:
        if namespace is None:
            cur = self._run("SELECT data FROM items WHERE id = ?", (item_id,))
        else:
            cur = self._run("SELECT data FROM items WHERE id = ? AND namespace = ?", (item_id, namespace))
        return [json.loads(data) for (data,) in cur]

    def namespace_items(self, namespace: str) -> list[dict]:
        cur = self._run(f"SELECT data FROM items WHERE namespace = ? ORDER BY {self.ORDER}", (namespace,))
        return [json.loads(data) for (data,) in cur]

    # -- episodes ----------------------------------------------------------------------------------
    def new_episode(self, namespace: str, time: str | None) -> int:
        """Inside `write`: a number no other episode of this memory has (never reused)."""
        n = self._run("INSERT INTO episodes(namespace, time, data) VALUES (?, ?, '{}') RETURNING n",
                      (namespace, time)).fetchone()[0]
        self._run("INSERT INTO namespaces(namespace, episodes) VALUES (?, 1) ON CONFLICT(namespace) "
                  "DO UPDATE SET episodes = namespaces.episodes + 1", (namespace,))
        return int(n)

    def save_episode(self, n: int, data: dict) -> None:
        self._run("UPDATE episodes SET id = ?, data = ? WHERE n = ?",
                  (data["id"], json.dumps(data, ensure_ascii=False, default=str), n))

    def episode_count(self, namespace: str) -> int:
        row = self._run("SELECT episodes FROM namespaces WHERE namespace = ?", (namespace,)).fetchone()
        return 0 if row is None else int(row[0])

    def episode(self, episode_id: str, namespace: str) -> dict | None:
        row = self._run("SELECT data FROM episodes WHERE id = ? AND namespace = ? ORDER BY n DESC LIMIT 1",
                        (episode_id, namespace)).fetchone()
        return None if row is None else json.loads(row[0])

    def _counts(self, status_sql: str) -> dict[str, Any]:
        """Users, items by status (``status_sql``: the dialect's JSON field of ``data``), episodes, changes."""
        status = dict.fromkeys(("active", "superseded", "deleted"), 0)
        for name, n in self._run(f"SELECT {status_sql}, COUNT(*) FROM items GROUP BY 1"):
            status[str(name)] = int(n)
        users = self._run("SELECT COUNT(*) FROM namespaces").fetchone()[0]
        episodes = self._run("SELECT COUNT(*) FROM episodes").fetchone()[0]
        return {"users": int(users), "items": status, "episodes": int(episodes), "changes": self.counters()[0]}

    def purge(self, namespace: str) -> tuple[dict[str, int], list[str]]:
        """Inside `write`: remove a namespace's items, episodes, vectors and its row of ``namespaces``.
        Returns what the DELETE statements themselves removed (``RETURNING``, in this transaction):
        rows of ``items``, ``episodes``, ``vectors`` and ``users`` (``namespaces``), the ``messages`` (turns and
        steps) the episodes held, and the texts of the items and messages (to check the process's
        memos for them afterwards)."""
        def removed(table: str, column: str) -> list:
            return [v for (v,) in self._run(f"DELETE FROM {table} WHERE namespace = ? RETURNING {column}", (namespace,))]
        items = [json.loads(d) for d in removed("items", "data")]
        episodes = [json.loads(d) for d in removed("episodes", "data")]
        vectors, users = removed("vectors", "key"), removed("namespaces", "namespace")
        said = [m for ep in episodes for m in (*ep.get("turns", ()), *ep.get("steps", ()))]
        texts = [it.get("text") for it in items] + [m.get(k) for m in said for k in ("text", "action", "observation")]
        counts = {"items": len(items), "episodes": len(episodes), "messages": len(said), "vectors": len(vectors),
                  "users": len(users)}
        return counts, [t for t in dict.fromkeys(texts) if isinstance(t, str) and t]

    def leftovers(self, namespace: str) -> dict[str, int]:
        """Rows a namespace still has in each table that holds a user's data (what a user's deletion
        checks, in its own transaction, is zero everywhere)."""
        return {table: int(self._run(f"SELECT COUNT(*) FROM {table} WHERE namespace = ?", (namespace,)).fetchone()[0])
                for table in ("items", "episodes", "vectors", "namespaces")}

    # -- vectors -------------------------------------------------------------------------------------
    def put_vectors(self, rows: list[tuple[str, str, bytes]]) -> None:
        """Inside `write`: (namespace, key, vector bytes) of texts the namespace's items hold."""
        self._run_many("INSERT INTO vectors(namespace, key, vector) VALUES (?, ?, ?) "
                       "ON CONFLICT(namespace, key) DO UPDATE SET vector = excluded.vector", rows)

    def drop_vector(self, namespace: str, key: str) -> int:
        """Inside `write`: remove the namespace's vector of one text (its item left search and no
        other active item of the namespace holds the text); returns the rows removed (0 or 1)."""
        return len(self._run("DELETE FROM vectors WHERE namespace = ? AND key = ? RETURNING key",
                             (namespace, key)).fetchall())

    def vector_count(self, namespace: str, key: str) -> int:
        return int(self._run("SELECT COUNT(*) FROM vectors WHERE namespace = ? AND key = ?",
                             (namespace, key)).fetchone()[0])

"""`MemoryDB`: the SQLite file under a `Memory`'s path — the source of truth that several processes
share (WAL, busy timeout, one writer at a time), with a change counter readers catch up from."""
from __future__ import annotations

import json
import os
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from memarch.errors import DataError, MemarchError
from memarch.pipeline.files import private_directory, private_file

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

DB_FILE = "memory.db"
LOCK_FILE = "memory.lock"
FORMAT = "memarch.memory/1"
BUSY_TIMEOUT_S = 60.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS items (
    namespace TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (namespace, id));
CREATE INDEX IF NOT EXISTS items_seq ON items(seq);
CREATE INDEX IF NOT EXISTS items_id ON items(id);
CREATE TABLE IF NOT EXISTS episodes (
    n INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT, namespace TEXT NOT NULL, time TEXT, data TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS episodes_id ON episodes(id);
CREATE INDEX IF NOT EXISTS episodes_namespace ON episodes(namespace);
CREATE TABLE IF NOT EXISTS namespaces (namespace TEXT PRIMARY KEY, episodes INTEGER NOT NULL);
"""


class MemoryDB:
    """Items (one JSON row per `MemoryItem`, keyed by namespace and id), the raw episodes that were
    added, and two counters: ``changes`` (every committed write) and ``purges`` (user deletions).

    Example::

        db = MemoryDB("mem/")
        with db.write():                      # BEGIN IMMEDIATE: the one writer at a time
            seq = db.bump()
            db.upsert([("alice", item.id, item.to_dict())], seq)
        db.counters()                         # (changes, purges): has anyone else written?

    Args:
        directory: where ``memory.db`` lives (created if missing).

    Rows keep their rowid when updated, so ``ORDER BY rowid`` is the order items were first
    written; a reader replays rows in that order and rebuilds the same store.
    """

    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self.path = self.directory / DB_FILE
        if self.directory.exists() and not self.directory.is_dir():
            raise DataError(f"{self.directory}: is a file (expected a directory for the memory's state)")
        try:
            private_directory(self.directory)
            private_file(self.path)  # before SQLite creates it: its -wal and -shm files take its mode
        except OSError as exc:
            raise DataError(f"{self.directory}: cannot create the memory directory ({exc.strerror or exc})") from None
        self._pid, self._conn = -1, None
        self._lock_pid, self._lock_fd = -1, -1
        try:
            with self.write():
                for stmt in filter(str.strip, _SCHEMA.split(";")):
                    self.conn.execute(stmt)
                fmt = self.get_meta("format")
                if fmt is None:
                    if self.conn.execute("SELECT count(*) FROM items").fetchone()[0]:
                        raise DataError(f"{self.path}: has items but no format; not a memarch memory")
                    self.set_meta("format", FORMAT)
                    self.set_meta("changes", 0)
                    self.set_meta("purges", 0)
                elif fmt != FORMAT:
                    raise DataError(f"{self.path}: memory format {fmt!r}, this memarch reads {FORMAT!r}")
        except sqlite3.DatabaseError as exc:
            raise DataError(f"{self.path}: not a memarch memory database ({exc})") from None

    @property
    def conn(self) -> sqlite3.Connection:
        """This process's connection: a forked child (a web server's worker) opens its own, as
        SQLite requires."""
        if self._pid != os.getpid():
            # isolation_level=None: transactions are begun explicitly (IMMEDIATE for writers).
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                   check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            conn.execute("PRAGMA journal_mode = WAL")
            # NORMAL in WAL mode: every commit is atomic and survives a process crash; a power
            # loss may drop the last commits but never corrupts the file.
            conn.execute("PRAGMA synchronous = NORMAL")
            self._pid, self._conn = os.getpid(), conn
        return self._conn

    def close(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            self._conn.close()
        self._pid, self._conn = -1, None
        if self._lock_fd >= 0 and self._lock_pid == os.getpid():
            os.close(self._lock_fd)
        self._lock_pid, self._lock_fd = -1, -1

    # -- transactions ------------------------------------------------------------------------------
    @contextmanager
    def write(self) -> Iterator[None]:
        """One write transaction: waits (up to the busy timeout) for other writers, commits on
        success, rolls back on any error."""
        with self._writer_lock():
            self._begin("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self._end()

    @contextmanager
    def _writer_lock(self) -> Iterator[None]:
        """An flock on ``memory.lock`` around each write: a waiting writer gets the lock as soon as
        it is free, where SQLite's busy handler sleeps up to 100 ms between tries."""
        if fcntl is None:  # no flock (Windows): SQLite's own lock alone
            yield
            return
        if self._lock_pid != os.getpid():
            self._lock_fd = os.open(self.directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
            self._lock_pid = os.getpid()
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise MemarchError(f"{self.directory / LOCK_FILE}: another process held the write lock "
                                       f"for over {BUSY_TIMEOUT_S:.0f} s") from None
                time.sleep(0.0005)
        try:
            yield
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    @contextmanager
    def read(self) -> Iterator[None]:
        """A consistent snapshot for several SELECTs (WAL readers never block the writer)."""
        self._begin("BEGIN")
        try:
            yield
        finally:
            self._end()

    def _begin(self, sql: str) -> None:
        try:
            self.conn.execute(sql)
        except sqlite3.OperationalError as exc:  # "database is locked" after the busy timeout
            raise MemarchError(f"{self.path}: {exc} (another process held it for over "
                               f"{BUSY_TIMEOUT_S:.0f} s)") from None

    def _end(self) -> None:
        try:
            self.conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            self.conn.execute("ROLLBACK")
            raise MemarchError(f"{self.path}: commit failed ({exc})") from None

    # -- meta and counters -------------------------------------------------------------------------
    def get_meta(self, key: str) -> Any:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def set_meta(self, key: str, value: Any) -> None:
        self.conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE "
                          "SET value = excluded.value", (key, json.dumps(value, sort_keys=True)))

    def counters(self) -> tuple[int, int]:
        """(changes, purges) as committed now: one indexed read, cheap enough before every search."""
        rows = dict(self.conn.execute("SELECT key, value FROM meta WHERE key IN ('changes', 'purges')"))
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
        self.conn.executemany(
            "INSERT INTO items(namespace, id, seq, data) VALUES (?, ?, ?, ?) ON CONFLICT(namespace, id) "
            "DO UPDATE SET seq = excluded.seq, data = excluded.data",
            [(ns, iid, seq, json.dumps(data, ensure_ascii=False, default=str)) for ns, iid, data in rows])

    def items(self, since: int = 0) -> list[dict]:
        """Items changed after change ``since`` (all with 0), in first-written order."""
        cur = self.conn.execute("SELECT data FROM items WHERE seq > ? ORDER BY rowid", (since,))
        return [json.loads(data) for (data,) in cur]

    def find(self, item_id: str, namespace: str | None = None) -> list[dict]:
        if namespace is None:
            cur = self.conn.execute("SELECT data FROM items WHERE id = ?", (item_id,))
        else:
            cur = self.conn.execute("SELECT data FROM items WHERE id = ? AND namespace = ?", (item_id, namespace))
        return [json.loads(data) for (data,) in cur]

    def namespace_items(self, namespace: str) -> list[dict]:
        cur = self.conn.execute("SELECT data FROM items WHERE namespace = ? ORDER BY rowid", (namespace,))
        return [json.loads(data) for (data,) in cur]

    # -- episodes ----------------------------------------------------------------------------------
    def new_episode(self, namespace: str, time: str | None) -> int:
        """Inside `write`: a number no other episode of this memory has (never reused)."""
        cur = self.conn.execute("INSERT INTO episodes(namespace, time, data) VALUES (?, ?, '{}')", (namespace, time))
        self.conn.execute("INSERT INTO namespaces(namespace, episodes) VALUES (?, 1) ON CONFLICT(namespace) "
                          "DO UPDATE SET episodes = episodes + 1", (namespace,))
        return int(cur.lastrowid)

    def save_episode(self, n: int, data: dict) -> None:
        self.conn.execute("UPDATE episodes SET id = ?, data = ? WHERE n = ?",
                          (data["id"], json.dumps(data, ensure_ascii=False, default=str), n))

    def episode_count(self, namespace: str) -> int:
        row = self.conn.execute("SELECT episodes FROM namespaces WHERE namespace = ?", (namespace,)).fetchone()
        return 0 if row is None else int(row[0])

    def episode(self, episode_id: str, namespace: str) -> dict | None:
        row = self.conn.execute("SELECT data FROM episodes WHERE id = ? AND namespace = ? ORDER BY n DESC",
                                (episode_id, namespace)).fetchone()
        return None if row is None else json.loads(row[0])

    def stats(self) -> dict[str, Any]:
        """Users, items by status, episodes, the change counter and the file's bytes (WAL included)."""
        status = dict.fromkeys(("active", "superseded", "deleted"), 0)
        for name, n in self.conn.execute("SELECT json_extract(data, '$.status'), COUNT(*) FROM items GROUP BY 1"):
            status[str(name)] = int(n)
        users = self.conn.execute("SELECT COUNT(*) FROM namespaces").fetchone()[0]
        episodes = self.conn.execute("SELECT COUNT(*) FROM episodes").fetchone()[0]
        size = sum(p.stat().st_size for p in self.directory.glob(DB_FILE + "*") if p.is_file())
        return {"users": int(users), "items": status, "episodes": int(episodes),
                "changes": self.counters()[0], "bytes": size}

    def purge(self, namespace: str) -> tuple[int, int]:
        """Inside `write`: remove a namespace's items and episodes; returns how many of each."""
        items = self.conn.execute("DELETE FROM items WHERE namespace = ?", (namespace,)).rowcount
        episodes = self.conn.execute("DELETE FROM episodes WHERE namespace = ?", (namespace,)).rowcount
        self.conn.execute("DELETE FROM namespaces WHERE namespace = ?", (namespace,))
        return int(items), int(episodes)

"""`MemoryDB`: the SQLite file under a `Memory`'s path — the source of truth that several processes
share (WAL, busy timeout, one writer at a time), with a change counter readers catch up from."""
from __future__ import annotations

import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from memarch.errors import DataError, MemarchError
from memarch.app.state_sql import StateSQL
from memarch.pipeline.files import private_directory, private_file

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

DB_FILE = "memory.db"
LOCK_FILE = "memory.lock"
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
CREATE TABLE IF NOT EXISTS vectors (
    namespace TEXT NOT NULL, key TEXT NOT NULL, vector BLOB NOT NULL, PRIMARY KEY (namespace, key));
CREATE INDEX IF NOT EXISTS vectors_key ON vectors(key);
"""


def open_database(path: str | Path) -> Any:
    """The state of a `Memory` at ``path``: a directory (`MemoryDB`, SQLite, created if missing) or
    a ``postgresql://`` URL (`PostgresDB`). A URL of another scheme is refused in one line, never
    taken for a directory name."""
    from memarch.app.postgres import SCHEMES, PostgresDB, is_url, redacted

    scheme = is_url(path)
    if scheme is None:
        return MemoryDB(path)
    if scheme in SCHEMES:
        return PostgresDB(str(path))
    raise DataError(f"{redacted(str(path))}: a memory lives in a directory (SQLite) or at a postgresql:// URL; "
                    f"memarch does not serve {scheme}://")


class MemoryDB(StateSQL):
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
        self._local = threading.local()
        self._opened: list[tuple[int, sqlite3.Connection]] = []  # (pid, connection) of every thread's
        self._opened_lock = threading.Lock()
        self._lock_pid, self._lock_fd = -1, -1
        try:
            with self.write():
                self._initialise(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise DataError(f"{self.path}: not a memarch memory database ({exc})") from None

    @property
    def conn(self) -> sqlite3.Connection:
        """This thread's connection: each thread of a server has its own (its transactions are its
        own), and a forked child (a web server's worker) opens its own, as SQLite requires."""
        local = self._local
        if getattr(local, "pid", None) != os.getpid():
            # isolation_level=None: transactions are begun explicitly (IMMEDIATE for writers).
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                   check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            conn.execute("PRAGMA journal_mode = WAL")
            # NORMAL in WAL mode: every commit is atomic and survives a process crash; a power
            # loss may drop the last commits but never corrupts the file.
            conn.execute("PRAGMA synchronous = NORMAL")
            # A deleted row's bytes are overwritten with zeros, not left in free pages.
            conn.execute("PRAGMA secure_delete = ON")
            local.conn, local.pid = conn, os.getpid()
            with self._opened_lock:
                self._opened.append((os.getpid(), conn))
        return local.conn

    def close(self) -> None:
        """Close this process's connections (every thread's)."""
        with self._opened_lock:
            mine = [c for pid, c in self._opened if pid == os.getpid()]
            self._opened = [(pid, c) for pid, c in self._opened if pid != os.getpid()]
        for conn in mine:
            try:
                conn.close()
            except sqlite3.ProgrammingError:  # pragma: no cover - closed already
                pass
        self._local = threading.local()
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

    def peek_counters(self) -> tuple[int, int]:
        """`counters` outside a transaction: one statement (what a search asks before it reads)."""
        return self.counters()

    def stats(self) -> dict[str, Any]:
        """Users, items by status, episodes, the change counter and the file's bytes (WAL included)."""
        size = sum(p.stat().st_size for p in self.directory.glob(DB_FILE + "*") if p.is_file())
        return {**self._counts("json_extract(data, '$.status')"), "bytes": size}

    def checkpoint(self) -> bool:
        """Outside a transaction: copy the write-ahead log into the database and empty it, so that
        the log keeps no page as it was before a purge; False when a reader of another process held
        an older snapshot (then the log is emptied by a later checkpoint)."""
        busy, _, _ = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return not busy

    # -- vectors -------------------------------------------------------------------------------------
    def get_vectors(self, keys: list[str]) -> dict[str, bytes]:
        """The stored vector of each key found (whichever namespace holds it)."""
        out: dict[str, bytes] = {}
        for i in range(0, len(keys), 900):
            chunk = keys[i:i + 900]
            q = f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(chunk))})"
            out.update((k, bytes(v)) for k, v in self.conn.execute(q, chunk))
        return out

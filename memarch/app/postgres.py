"""`PostgresDB`: a `Memory`'s state in PostgreSQL, for several servers on several machines sharing one
memory — the same items, episodes, users, vectors, counters and import marks as `MemoryDB` (SQLite),
behind the same methods, so `Memory` runs on either (``Memory.load(program, path="postgresql://...")``).

Writers are serialised by a transaction-scoped advisory lock (one per memory); every committed write
moves the ``changes`` counter in the same transaction as its rows, so a process catches up by reading
the counter and the rows with ``seq`` above what it saw, in one REPEATABLE READ snapshot: a cost in
the changes, not in the memory. A process reads its own writes at once and another's at its next
call (it reads the counter before each one). Connections come from a psycopg 3 pool, one pool per
process (a forked worker opens its own).
"""
from __future__ import annotations

import hashlib
import os
import re
import threading
from contextlib import contextmanager
from typing import Any, Iterator
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from memarch.app.state_sql import StateSQL
from memarch.errors import DataError, MemarchError

SCHEMES = ("postgresql", "postgres")
POOL_MAX = 8  # connections per process: one per thread that is inside a read or a write at once

_TABLES = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS items (
    n BIGSERIAL, namespace TEXT NOT NULL, id TEXT NOT NULL, seq BIGINT NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (namespace, id));
CREATE INDEX IF NOT EXISTS items_seq ON items(seq);
CREATE INDEX IF NOT EXISTS items_id ON items(id);
CREATE INDEX IF NOT EXISTS items_n ON items(n);
CREATE TABLE IF NOT EXISTS episodes (
    n BIGSERIAL PRIMARY KEY, id TEXT, namespace TEXT NOT NULL, time TEXT, data TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS episodes_id ON episodes(id, namespace);
CREATE INDEX IF NOT EXISTS episodes_namespace ON episodes(namespace);
CREATE TABLE IF NOT EXISTS namespaces (namespace TEXT PRIMARY KEY, episodes INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS vectors (
    namespace TEXT NOT NULL, key TEXT NOT NULL, vector BYTEA NOT NULL, PRIMARY KEY (namespace, key));
CREATE INDEX IF NOT EXISTS vectors_key ON vectors(key);
"""


def is_url(path: Any) -> str | None:
    """The scheme of ``path`` when it is a URL (``scheme://...``), else None."""
    m = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://", str(path))
    return m.group(1).lower() if m else None


def redacted(url: str) -> str:
    """``url`` without its password (what messages, logs and ``stats()`` show)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


class PostgresDB(StateSQL):
    """The `MemoryDB` methods over PostgreSQL.

    Example::

        db = PostgresDB("postgresql://memarch@db.internal/memarch?schema=support_bot")
        with db.write():
            seq = db.bump()
            db.upsert([("alice", item.id, item.to_dict())], seq)

    Args:
        url: a libpq URL; its ``schema`` query parameter (default ``memarch``) names the PostgreSQL
            schema holding this memory's tables, so one database can hold several memories.
    """

    PLACEHOLDER = "%s"
    ORDER = "n"
    SEQ_INDEX = ""  # PostgreSQL's planner takes the seq index by itself

    def __init__(self, url: str):
        try:
            import psycopg  # noqa: F401
            from psycopg_pool import ConnectionPool  # noqa: F401
        except ImportError:  # pragma: no cover - a dependency of memarch
            raise MemarchError("a postgresql:// memory needs psycopg 3 and psycopg-pool "
                               "(pip install 'psycopg[binary]' psycopg-pool)") from None
        parts = urlsplit(url)
        query = dict(parse_qsl(parts.query))
        self.schema = query.pop("schema", "memarch")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,62}", self.schema):
            raise DataError(f"{redacted(url)}: schema must be a PostgreSQL identifier (letters, digits, _), "
                            f"got {self.schema!r}")
        self.conninfo = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), parts.fragment))
        self.directory = self.path = redacted(url)  # what `Memory` calls its path
        self._lock_key = int.from_bytes(hashlib.sha256(f"memarch:{self.schema}".encode()).digest()[:8], "big",
                                        signed=True)
        self._pid, self._pool = -1, None
        self._local = threading.local()
        try:
            with self._connection() as conn:
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
                    conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
                    self._local.conn = conn
                    try:
                        self._initialise(_TABLES)
                    finally:
                        self._local.conn = None
        except DataError:
            self.close()
            raise
        except Exception as exc:  # psycopg.OperationalError and the like: one line, no password
            self.close()
            raise DataError(f"{self.path}: cannot open the memory's database "
                            f"({' '.join(str(exc).split()) or type(exc).__name__})") from None

    # -- connections ---------------------------------------------------------------------------------
    @property
    def pool(self):
        """This process's pool (a forked child builds its own; the parent's sockets are not its to use)."""
        if self._pid != os.getpid():
            from psycopg_pool import ConnectionPool

            schema = self.schema

            def configure(conn: Any) -> None:
                conn.execute(f'SET search_path TO "{schema}"')

            self._pool = ConnectionPool(self.conninfo, min_size=1, max_size=POOL_MAX, open=True, timeout=60,
                                        kwargs={"autocommit": True}, configure=configure, name=f"memarch-{schema}")
            self._pid = os.getpid()
            self._local = threading.local()
        return self._pool

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        with self.pool.connection() as conn:
            yield conn

    @property
    def conn(self) -> Any:
        """The connection of the read or write this thread is in."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            raise MemarchError("PostgresDB: a statement outside db.read() / db.write()")
        return conn

    def close(self) -> None:
        if self._pool is not None and self._pid == os.getpid():
            self._pool.close()
        self._pid, self._pool = -1, None

    # -- transactions ------------------------------------------------------------------------------
    @contextmanager
    def write(self) -> Iterator[None]:
        """One write transaction, after every earlier writer of this memory (the advisory lock);
        commits on success, rolls back on any error."""
        if getattr(self._local, "conn", None) is not None:
            raise MemarchError("PostgresDB: a write inside another read or write")
        with self._connection() as conn:
            self._local.conn = conn
            try:
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock_key,))
                    yield
            finally:
                self._local.conn = None

    @contextmanager
    def read(self) -> Iterator[None]:
        """A consistent snapshot for several SELECTs (REPEATABLE READ, read only; it waits for no writer).
        Inside a write: that write's own view."""
        if getattr(self._local, "conn", None) is not None:
            yield
            return
        with self._connection() as conn:
            self._local.conn = conn
            try:
                with conn.transaction():
                    conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                    yield
            finally:
                self._local.conn = None

    def peek_counters(self) -> tuple[int, int]:
        """`counters` outside a transaction: one statement on a pooled connection."""
        if getattr(self._local, "conn", None) is not None:
            return self.counters()
        with self._connection() as conn:  # autocommit: the statement alone, no transaction around it
            self._local.conn = conn
            try:
                return self.counters()
            finally:
                self._local.conn = None

    def stats(self) -> dict[str, Any]:
        """Users, items by status, episodes, the change counter and the tables' bytes."""
        size = self._run("SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                         "JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = ? AND c.relkind = 'r'",
                         (self.schema,)).fetchone()[0]
        return {**self._counts("(data::jsonb)->>'status'"), "bytes": int(size)}

    def checkpoint(self) -> bool:
        """After a purge: VACUUM the tables, so the deleted rows' space is reclaimed (PostgreSQL does
        not zero it; its write-ahead log keeps them until recycled: docs/serving.md)."""
        with self._connection() as conn:
            for table in ("items", "episodes", "vectors", "namespaces"):
                conn.execute(f'VACUUM "{self.schema}".{table}')
        return True

    # -- vectors -------------------------------------------------------------------------------------
    def get_vectors(self, keys: list[str]) -> dict[str, bytes]:
        if not keys:
            return {}
        if getattr(self._local, "conn", None) is None:  # an embedder's lookup outside a transaction
            with self.read():
                return self.get_vectors(keys)
        cur = self._run("SELECT key, vector FROM vectors WHERE key = ANY(?)", (list(keys),))
        return {k: bytes(v) for k, v in cur}

"""On-disk key-value caches shared across programs and processes (SQLite in WAL mode).

Used for embeddings (key: model id + text hash) and encoder outputs (key: encoder, config,
instructions, episode hash, LM id). Several processes may read and write one cache at once."""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any, Iterable

from memarch.pipeline.files import private_directory, private_file


def default_cache_dir() -> Path:
    """``$MEMARCH_CACHE_DIR``, else ``~/.cache/memarch``."""
    env = os.environ.get("MEMARCH_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "memarch"


def stable_hash(*parts: Any) -> str:
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class DiskCache:
    """A persistent bytes/JSON cache in one SQLite file.

    Example::

        cache = DiskCache("/tmp/c.sqlite")
        cache.set_json("k", {"a": 1}); cache.get_json("k")
    """

    def __init__(self, path: str | os.PathLike, *, table: str = "kv"):
        self.path = Path(path)
        # Embeddings and encoder outputs are functions of users' texts: the cache folder 0700, its files 0600.
        private_directory(self.path.parent)
        private_file(self.path)
        if not table.isidentifier():
            raise ValueError("table must be an identifier")
        self.table = table
        self._local = threading.local()
        self.hits = 0
        self.misses = 0
        with self._conn() as c:
            c.execute(f"CREATE TABLE IF NOT EXISTS {table} (k TEXT PRIMARY KEY, v BLOB NOT NULL)")

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            conn = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
            self._local.pid = os.getpid()
        return conn

    def get(self, key: str) -> bytes | None:
        row = self._conn().execute(f"SELECT v FROM {self.table} WHERE k=?", (key,)).fetchone()
        if row is None:
            self.misses += 1
            return None
        self.hits += 1
        return bytes(row[0])

    def get_many(self, keys: Iterable[str]) -> dict[str, bytes]:
        keys = list(dict.fromkeys(keys))
        out: dict[str, bytes] = {}
        conn = self._conn()
        for i in range(0, len(keys), 900):
            chunk = keys[i:i + 900]
            q = f"SELECT k, v FROM {self.table} WHERE k IN ({','.join('?' * len(chunk))})"
            out.update({k: bytes(v) for k, v in conn.execute(q, chunk)})
        self.hits += len(out)
        self.misses += len(keys) - len(out)
        return out

    def present(self, keys: Iterable[str]) -> set[str]:
        """The ``keys`` the cache holds (their values are not read)."""
        keys = list(dict.fromkeys(keys))
        out: set[str] = set()
        conn = self._conn()
        for i in range(0, len(keys), 900):
            chunk = keys[i:i + 900]
            out.update(k for (k,) in conn.execute(
                f"SELECT k FROM {self.table} WHERE k IN ({','.join('?' * len(chunk))})", chunk))
        return out

    def set(self, key: str, value: bytes) -> None:
        self.set_many({key: value})

    def set_many(self, items: dict[str, bytes]) -> None:
        if not items:
            return
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(f"INSERT OR REPLACE INTO {self.table} (k, v) VALUES (?, ?)", list(items.items()))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def get_json(self, key: str) -> Any | None:
        raw = self.get(key)
        return None if raw is None else json.loads(raw.decode("utf-8"))

    def set_json(self, key: str, value: Any) -> None:
        self.set(key, json.dumps(value, ensure_ascii=False).encode("utf-8"))

    def __len__(self) -> int:
        return self._conn().execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0]

    def clear(self) -> None:
        self._conn().execute(f"DELETE FROM {self.table}")


class BoundedMemo:
    """An in-process map of at most ``size`` entries; the oldest entry leaves first (insertion order).

    Example::

        memo = BoundedMemo(2)
        memo.put("a", 1); memo.put("b", 2); memo.put("c", 3)
        memo.get("a")  # None: it left when "c" came
    """

    def __init__(self, size: int):
        self.size = int(size)
        self._data: dict[Any, Any] = {}
        self._lock = threading.Lock()  # `get` is one dict lookup; `put` evicts under the lock

    def get(self, key: Any) -> Any | None:
        return self._data.get(key)

    def put(self, key: Any, value: Any) -> Any:
        """Keep ``value`` under ``key``; returns it."""
        data = self._data
        with self._lock:
            data.pop(key, None)
            data[key] = value
            while len(data) > self.size:
                del data[next(iter(data))]
        return value

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        self._data.clear()

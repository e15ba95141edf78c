"""The locks that let one `Memory` serve many threads: searches of one user run beside another user's
add instead of queueing behind it.

- `SharedLock`: held shared by every call that reads or writes users' items in the in-memory
  program, exclusively by what changes all of it at once (applying another process's commits,
  rebuilding the program after a user's deletion or a failed write);
- `UserLocks`: one lock per user (a fixed set of stripes, so any number of users costs the same
  memory): a search of user A waits only for a write to A;
- writes go one at a time (the database allows one writer), under `Memory`'s writer mutex.

A write takes them in one order: the writer mutex, the database's write lock (SQLite: an flock and
``BEGIN IMMEDIATE``; PostgreSQL: an advisory lock), `SharedLock.shared`, then its users' locks; a
search takes `SharedLock.shared` and its user's lock, never the writer's.
"""
from __future__ import annotations

import threading
import zlib
from contextlib import ExitStack, contextmanager
from typing import Iterable, Iterator

STRIPES = 64  # user locks; two users sharing a stripe wait for each other, nothing worse


class SharedLock:
    """Many holders at once of `shared`, or one of `exclusive`; a waiting `exclusive` holds back
    new `shared` ones (so a catch-up is not starved by a stream of searches). Not reentrant: a
    thread that holds `shared` must not ask for `exclusive`.

    Example::

        lock = SharedLock()
        with lock.shared():      # any number of threads at once
            ...
        with lock.exclusive():   # alone
            ...
    """

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._waiting = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            while self._writer or self._waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._waiting += 1
            try:
                while self._writer or self._readers:
                    self._cond.wait()
            finally:
                self._waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


class UserLocks:
    """A lock per user id, taken in one order (so two writers of several users never deadlock)."""

    def __init__(self, stripes: int = STRIPES) -> None:
        self._locks = [threading.Lock() for _ in range(stripes)]

    def _stripe(self, user: str) -> int:
        return zlib.crc32(user.encode("utf-8", "surrogatepass")) % len(self._locks)

    @contextmanager
    def held(self, users: Iterable[str]) -> Iterator[None]:
        with ExitStack() as stack:
            for i in sorted({self._stripe(u) for u in users}):
                stack.enter_context(self._locks[i])
            yield

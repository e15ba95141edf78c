"""`Memory`: a compiled program as the long-term memory of a live app — add a user's messages,
search them later, across restarts and from several processes (SQLite underneath, see
`MemoryDB`), every result with its provenance and lineage."""
from __future__ import annotations

import dataclasses
import logging
import threading
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Callable, Iterable, TypeVar

from memarch.errors import MemarchError, NotFoundError
from memarch.pipeline.episodes import Episode, Query
from memarch.pipeline.items import MemoryItem
from memarch.app.bulk import BATCH, Session, sessions_of
from memarch.app.correction import correct
from memarch.app.database import open_database
from memarch.app.deletion import (PROCESS, Check, DeletionReport, Removed, confirm, item_held, item_rows_left,
                                  user_held, user_rows_left)
from memarch.app.locks import SharedLock, UserLocks
from memarch.app.messages import Messages, as_messages, as_time, as_user
from memarch.app.program_file import build_program, claim, read_program
from memarch.app.records import MemoryRecord
from memarch.app.transaction import Transaction
from memarch.app.vectors import private_embedder
from memarch.pipeline.resources import Resources

__all__ = ["DeletionReport", "Memory", "MemoryRecord"]

log = logging.getLogger(__name__)
T = TypeVar("T")


class _AlreadyGone(Exception):
    """Inside a delete's transaction: the item is superseded or deleted already (nothing written);
    carries its text (what its checks look for)."""

    def __init__(self, text: str):
        super().__init__(text)
        self.text = text


class Memory:
    """A compiled memory program with persistent, shared state under ``path``.

    Example::

        memory = Memory.load("program.json", path="mem/")
        memory.add([{"role": "user", "content": "I moved to Lisbon in May."}], user_id="ana")
        for hit in memory.search("where does Ana live?", user_id="ana", limit=3):
            print(hit.score, hit.text, hit.episode_id, hit.source_ids)
        memory.history(hit.id)            # what the encoder and the manager did to it
        memory.delete(user_id="ana")      # everything of ana's, from disk too

    Args:
        program: a saved program (``memarch compile --out``), a bare architecture JSON, or an
            `Architecture` / `MemoryProgram`; its saved memory bank, if any, is not used (logged).
        path: directory of the state (``memory.db``, SQLite in WAL mode; created if missing), or a
            ``postgresql://`` URL (`PostgresDB`: servers on several machines share it). Another
            process (or a restart) that loads the same program on the same path shares it.
        resources: embedder and LM (default: the program's embedder, no LM).

    Locking (app/locks.py): a search holds the program shared (`SharedLock`) and its user's lock
    (`UserLocks`, 64 stripes), so it runs beside writes of other users. A write takes this process's
    one writer turn, then the database's write lock (an flock and SQLite's ``BEGIN IMMEDIATE``, or
    PostgreSQL's advisory lock: one writer across processes), then the program shared and the locks
    of the users it writes; its body gets the `Transaction` and everything it changed commits at
    once. Applying other processes' commits, or rebuilding after a user's deletion, holds the
    program exclusively. A write first applies what other processes committed, so the manager
    curates against the whole memory and nothing is lost; a search first applies committed changes
    (one counter read when there are none).
    """

    def __init__(self, program: Any, path: str | Path, *, resources: Resources | None = None):
        data, source, resources = read_program(program, resources)
        self._source = source
        self._data = data
        # Searches of one user run beside another user's add: `SharedLock` (shared by per-user work,
        # exclusive to apply other processes' commits or rebuild the program), a lock per user, and
        # one writer at a time (app/locks.py).
        self._rw, self._users, self._writer = SharedLock(), UserLocks(), threading.Lock()
        self.db = open_database(path)
        self.path = self.db.directory
        # Its own embedder: vectors in this memory's database (deleted with their user), a bounded
        # memo, nothing in the shared disk caches; no encoder-output cache either.
        self.resources = dataclasses.replace(resources, embedder=private_embedder(resources.embedder, self.db),
                                             use_encoder_cache=False)
        self._vector_cache = self.resources.embedder.cache  # `MemoryVectors`: looked up only while loading items
        self.program = build_program(data, self.resources, source)
        claim(self.db, data, self._source, self.program.architecture)
        self._seen = (-1, -1)
        self._reload()

    @classmethod
    def load(cls, program: Any, path: str | Path, *, resources: Resources | None = None) -> "Memory":
        """`Memory(program, path)`: the compiled program's memory, state under ``path``."""
        return cls(program, path, resources=resources)

    # -- the app's API -------------------------------------------------------------------------------
    def add(self, messages: Messages, *, user_id: str = "default", timestamp: Any = None) -> list[MemoryRecord]:
        """Write messages (a string or ``[{"role", "content"}]``) as one conversation session of
        ``user_id``, dated ``timestamp`` (default now, UTC); returns the items the manager kept."""
        ns = as_user(user_id)
        said, when = as_messages(messages), as_time(timestamp)
        if self.program.family == "experience":
            raise MemarchError(f"{self._source}: an experience-family program (encoders "
                               f"{', '.join(self.program.architecture.encode)}) reads agent steps, not "
                               "messages; use add_episode")
        return self._write([Session(user_id=ns, messages=said, when=when)])[0]

    def add_episode(self, episode: Episode, *, user_id: str | None = None) -> list[MemoryRecord]:
        """Write any `Episode` (an agent trajectory for experience programs) for ``user_id``."""
        ns = as_user(user_id if user_id is not None else episode.namespace)
        return self._write([Session(user_id=ns, episode=episode)])[0]

    def add_many(self, sessions: Iterable[Any], *, user_id: str = "default", batch: int = BATCH,
                 on_progress: Callable[[int], None] | None = None, resume_key: str | None = None,
                 resume_from: int = 0) -> list[list[MemoryRecord]]:
        """Write many sessions, in order, with the same result as one `add` each (same items, ids,
        lineage and search results), ``batch`` sessions per transaction with their embeddings
        computed in one call. A session: what `add` takes (a string, a message dict or a list), a
        dict ``{"messages", "user_id", "timestamp"}``, or an `Episode` (as `add_episode`).

        All of a session list is checked before anything is written; a batch is all or nothing,
        so after a crash the memory holds whole batches. ``on_progress(n)`` after each commit
        (sessions written so far). With ``resume_key``, each commit also records ``resume_from`` +
        the sessions written so far under that key (`import_progress`), atomically with the batch.
        Returns each session's kept items."""
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise MemarchError(f"batch: expected a positive integer, got {batch!r}")
        todo = sessions_of(sessions, user_id, conversation=self.program.family != "experience")
        out: list[list[MemoryRecord]] = []
        for start in range(0, len(todo), batch):
            chunk = todo[start:start + batch]

            def body(tx: Transaction, chunk: list[Session] = chunk,
                     done: int = start + len(chunk)) -> list[list[MemoryItem]]:
                kept = tx.write(chunk)
                if resume_key is not None:  # atomically with the batch
                    tx.db.set_meta(resume_key, resume_from + done)
                return kept
            kept = self._transaction(body, [s.user_id for s in chunk])
            out += [[MemoryRecord.of(it) for it in items] for items in kept]
            if on_progress is not None:
                on_progress(len(out))
        return out

    def update(self, item_id: str, text: str, *, user_id: str = "default", timestamp: Any = None) -> list[MemoryRecord]:
        """Correct one memory: ``text`` is written through the program (its encoders, then the
        manager's dedup and conflict rules) as a message dated ``timestamp`` (default now, UTC),
        and the item becomes ``superseded`` by what it wrote, never deleted. Each new item's
        lineage has ``updated_from`` (the old id, and the old text in its data); the old item's
        ends with ``superseded_by`` the new ids. Returns the new items (none when the manager
        merged the text into an item already there; the old one then points at that item).

        An experience-family program's encoders read agent steps, not messages: there the new
        text replaces the item's text as it is (same kind and provenance), then the manager's
        rules apply. Raises `NotFoundError` when ``item_id`` is not an active item of the user."""
        ns = as_user(user_id)
        if not isinstance(text, str) or not text.strip():
            raise MemarchError(f"text: expected a non-empty string, got {text!r}")
        when = as_time(timestamp)
        kept = self._transaction(lambda tx: correct(tx, item_id, ns, text, when), [ns])
        return [MemoryRecord.of(it) for it in kept]

    def search(self, query: str, *, user_id: str = "default", limit: int | None = None) -> list[MemoryRecord]:
        """The program's read for ``user_id``: at most ``limit`` (default the program's top_k)
        items, best first, each with score and provenance; other users' items never appear."""
        return self._read(query, user_id, limit, lambda r: [MemoryRecord.of(s.item, s.score) for s in r.items])

    def context(self, query: str, *, user_id: str = "default", limit: int | None = None) -> str:
        """The context the program would give the model (its context budget applied)."""
        return self._read(query, user_id, limit, lambda r: r.context)

    def history(self, item_id: str, *, user_id: str | None = None) -> list[dict[str, Any]]:
        """The item's lineage, oldest first: created by which encoder, then every manager action
        (``merged_from`` with the merged ids, ``superseded_by``, ``deleted``...)."""
        return self.get(item_id, user_id=user_id).lineage

    def source(self, item_id: str, *, user_id: str | None = None) -> list[dict[str, Any]]:
        """The messages an item was written from: ``[{"turn_id", "speaker", "text"}]`` (the
        steps, for an agent episode)."""
        record = self.get(item_id, user_id=user_id)
        with self.db.read():
            episode = self.db.episode(record.episode_id, record.user_id) if record.episode_id else None
        if episode is None:
            return []
        wanted = set(record.source_ids)
        turns = [{"turn_id": t["id"], "speaker": t["speaker"], "text": t["text"]} for t in episode.get("turns", [])]
        steps = [{"step_id": s["id"], "action": s["action"], "observation": s["observation"]}
                 for s in episode.get("steps", [])]
        return [m for m in turns + steps if m.get("turn_id", m.get("step_id")) in wanted]

    def get(self, item_id: str, *, user_id: str | None = None) -> MemoryRecord:
        """One item (also a superseded or deleted one) as committed now."""
        with self.db.read():
            rows = self.db.find(item_id, None if user_id is None else as_user(user_id))
        if not rows:
            whose = "" if user_id is None else f" of user {user_id!r}"
            raise NotFoundError(f"no memory item {item_id!r}{whose} in {self.path}")
        if len(rows) > 1:
            raise MemarchError(f"memory item {item_id!r} exists for several users; pass user_id")
        return MemoryRecord.of(MemoryItem.from_dict(rows[0]))

    def get_all(self, *, user_id: str = "default", include_deleted: bool = False) -> list[MemoryRecord]:
        """Every item of ``user_id`` as committed now, in the order they were written."""
        with self.db.read():
            rows = self.db.namespace_items(as_user(user_id))
        items = [MemoryItem.from_dict(r) for r in rows]
        return [MemoryRecord.of(it) for it in items if include_deleted or it.active]

    def delete(self, *, user_id: str, item_id: str | None = None) -> int:
        """With ``item_id``: tombstone that item (it leaves search, its history says ``deleted``);
        an item already superseded or deleted is left as it is (0: deleting is idempotent), an id the
        user never had raises `NotFoundError`. Without: remove every item and message of ``user_id``
        from disk. Returns items affected; `delete_verified` does the same and returns its report."""
        return self.delete_verified(user_id=user_id, item_id=item_id).deleted

    def delete_verified(self, *, user_id: str, item_id: str | None = None) -> DeletionReport:
        """`delete`, answered with a `DeletionReport`: the rows its transaction removed (counted by
        its own DELETE statements) and the checks made afterwards — the database in the same
        transaction (a write another process makes for the user once it committed is not mistaken
        for a leftover), then this process's store, indexes and memos. A check that finds anything
        raises `DeletionUnverified` (a bug): a database check rolls the deletion back. Other
        processes sharing the memory forget a deleted user at their next call (`remains` there)."""
        ns = as_user(user_id)
        return self._delete_user(ns) if item_id is None else self._delete_item(ns, item_id)

    def remains(self, *, user_id: str) -> list[Check]:
        """What this process holds of ``user_id`` once caught up with every commit (another
        process's deletion of the user included): records in its store, episodes its program counts
        (`deletion.user_held`); after a deletion, each `Check` finds nothing."""
        ns = as_user(user_id)
        self._catch_up()
        with self._rw.shared(), self._users.held([ns]):
            return user_held(self.program, ns)

    def count(self, *, user_id: str = "default") -> int:
        """Active items of ``user_id`` in this process's view (after catching up)."""
        ns = as_user(user_id)
        self._catch_up()
        with self._rw.shared(), self._users.held([ns]):
            return self.program.store.count(ns)

    def stats(self) -> dict[str, Any]:
        """What is under ``path`` as committed now: ``{"path", "program", "embedder", "users",
        "items": {"active", "superseded", "deleted"}, "episodes", "changes", "bytes"}``."""
        with self.db.read():
            counts = self.db.stats()
        return {"path": str(self.path), "program": self.program.architecture.key(),
                "embedder": self.resources.embedder.model if self.resources.embedder else None, **counts}

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Memory({self.program.architecture.key()!r}, path={str(self.path)!r})"

    # -- internals ---------------------------------------------------------------------------------
    def _read(self, query: str, user_id: str, limit: int | None, result: Callable[[Any], Any]) -> Any:
        """``result`` of the program's read for ``user_id``, made while no write of that user can
        change the items it returns (a write of another user goes on meanwhile)."""
        if not isinstance(query, str) or not query.strip():
            raise MemarchError("query: expected a non-empty string")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise MemarchError(f"limit: expected a positive integer, got {limit!r}")
        ns = as_user(user_id)
        self._catch_up()
        with self._rw.shared(), self._users.held([ns]):
            return result(self.program.read(Query(text=query, namespace=ns), top_k=limit))

    def _write(self, sessions: list[Session]) -> list[list[MemoryRecord]]:
        """``sessions`` (one or a batch) in one transaction: each session's kept items."""
        kept = self._transaction(lambda tx: tx.write(sessions), [s.user_id for s in sessions])
        return [[MemoryRecord.of(it) for it in items] for items in kept]

    def _delete_item(self, ns: str, item_id: str) -> DeletionReport:
        """Tombstone the item and drop its text's vector (unless another active item of the user
        holds that text), then check, before the transaction commits, that it is active neither in
        the database nor in this process's store and index."""
        embedder = self.resources.embedder

        def tombstone(tx: Transaction) -> tuple[str, str | None, int]:
            store = tx.program.store
            item = store.get(item_id, ns)
            if item is None:
                gone = store.get(item_id, ns, include_deleted=True)
                if gone is not None:
                    raise _AlreadyGone(gone.text)  # idempotent: deleting it again changes nothing
                raise NotFoundError(f"no memory item {item_id!r} of user {ns!r}")
            store.delete(item_id, ns, reason="deleted by the app", actor="app")
            if any(other.text == item.text for other in store.list(ns)):
                return item.text, None, 0
            key = embedder.key(item.text)
            return item.text, key, tx.db.drop_vector(ns, key)

        def verify(tx: Transaction, done: tuple[str, str | None, int]) -> DeletionReport:
            text, key, vectors = done
            checks = item_rows_left(tx.db, ns, item_id, key) + item_held(tx.program, ns, item_id, text)
            return DeletionReport(ns, item_id, 1, Removed(vectors=vectors),
                                  tuple(confirm(checks, ns, item_id, committed=False)))
        try:
            return self._transaction(tombstone, [ns], verify)
        except _AlreadyGone as gone:  # nothing written; still checked
            with self.db.read():
                rows = item_rows_left(self.db, ns, item_id, None)
            with self._rw.shared(), self._users.held([ns]):
                checks = rows + item_held(self.program, ns, item_id, gone.text)
            return DeletionReport(ns, item_id, 0, Removed(), tuple(confirm(checks, ns, item_id, committed=True)))

    def _delete_user(self, ns: str) -> DeletionReport:
        """Remove the user's rows in one transaction, checked empty before it commits; then, with
        the program held alone, empty this memory's memos, rebuild it from the database and check it
        holds nothing of the user."""
        with self._writer:  # no body to run through the program: it is rebuilt without the user
            with self.db.write():
                removed, texts = self.db.purge(ns)
                self.db.bump(purge=True)
                rows = confirm(user_rows_left(self.db, ns), ns, None, committed=False)
            log.info("deleted user %r: %d items, %d episodes", ns, removed["items"], removed["episodes"])
            with self._rw.exclusive():
                self._forget_texts()
                memos = sum(self.resources.texts.sizes().values())
                self._reload()
                held = [*user_held(self.program, ns, texts),
                        Check(PROCESS, "entries in the memory's memos of texts, once emptied", memos)]
            self.db.checkpoint()  # the write-ahead log keeps no page from before the purge
        return DeletionReport(ns, None, 0, Removed(**removed),
                              tuple(rows + confirm(held, ns, None, committed=True)))

    def import_progress(self, key: str) -> int:
        """Sessions committed so far by an `add_many` with ``resume_key=key`` (0 if none)."""
        with self.db.read():
            return int(self.db.get_meta(key) or 0)

    def _transaction(self, body: Callable[[Transaction], T], users: list[str],
                     check: Callable[[Transaction, T], Any] | None = None) -> Any:
        """``body(tx)``, a write of ``users``, in one database transaction after catching up; `tx`
        (`Transaction`) commits every item it touched. Locks, in this order: this process's writer
        turn, the database's write lock, the program shared and the locks of ``users`` (searches of
        other users go on meanwhile). This process's view moves to the new change number before its
        searches can see the commit as another process's. ``check(tx, out)``, when given, runs once
        the rows are written, before COMMIT (what it raises rolls the write back); its result is
        returned instead of ``out``."""
        with self._writer:
            # Catch up first, before the database's write lock: waiting for this process's searches
            # to finish must not hold every other process's writes; inside the lock only what was
            # committed meanwhile is left to apply (usually nothing).
            self._catch_up()
            tx: Transaction | None = None
            with ExitStack() as held:
                try:
                    with self.db.write():
                        if self._behind(self.db.counters()):  # the write's own snapshot: the latest commit
                            with self._rw.exclusive():
                                self._apply()
                        held.enter_context(self._rw.shared())
                        held.enter_context(self._users.held(users))
                        tx = Transaction(self.db, self.program)
                        out = body(tx)
                        seq = tx.commit()
                        if check is not None:
                            out = check(tx, out)
                    self._seen = (seq, self._seen[1])
                except BaseException:
                    held.close()
                    if tx is not None and tx.changed:
                        # The program may hold changes the rollback undid: rebuild it from what is committed.
                        with self._rw.exclusive():
                            self._reload()
                    raise
        return out

    def _catch_up(self) -> None:
        """Outside any transaction: apply what other processes committed since this one last looked
        (one counter read when nothing changed); else, alone (no search or write of this process runs
        meanwhile), in a snapshot taken after the wait. Holds no lock when called but, in a write,
        the writer turn."""
        if self._behind(self.db.peek_counters()):
            with self._rw.exclusive(), self.db.read():
                self._apply()

    def _behind(self, counters: tuple[int, int]) -> bool:
        """Whether ``counters`` (changes, purges) as read are ahead of this process's view (a read
        that began before this process's own last commit is not)."""
        changes, purges = counters
        seen_changes, seen_purges = self._seen
        return purges != seen_purges or changes > seen_changes

    def _apply(self) -> None:
        """Inside a read or the write, alone: bring the program up to the database's counters (the
        rows changed since, or the whole program rebuilt after a user's deletion)."""
        changes, purges = self.db.counters()
        if purges != self._seen[1]:
            self._rebuild()
        elif changes > self._seen[0]:
            rows = self.db.items(since=self._seen[0])
            self._load(rows)
            self._seen = (changes, purges)

    def _reload(self) -> None:
        """In a snapshot of its own: `_rebuild`."""
        with self.db.read():
            self._rebuild()

    def _rebuild(self) -> None:
        """Inside a read or the write: a fresh program holding every committed item, in the order
        they were first written."""
        changes, purges = self.db.counters()
        rows = self.db.items(since=0)
        if self._seen != (-1, -1):  # the first load already built one
            if purges != self._seen[1]:  # a user was deleted (here or by another process)
                self._forget_texts()
            self.program = build_program(self._data, self.resources, self._source)
        self._load(rows)
        self._seen = (changes, purges)

    def _forget_texts(self) -> None:
        """Empty this memory's memos of texts (its embedder's vectors, its `Resources.texts`), so no
        text of a deleted user stays in them; no other memory's are touched."""
        self.resources.embedder.forget()
        self.resources.forget_texts()

    def _load(self, rows: list[dict]) -> None:
        """Committed item rows into the program's store (vectors from the database, not the model);
        drained from its change log: they are committed already."""
        if rows:
            with self._vector_cache.loading():
                self.program.store.add([MemoryItem.from_dict(r) for r in rows])
        self.program.store.log_changes().drain()

"""`Transaction`: one write of a `Memory` in progress — what every write body (an add, a batch of
sessions, a correction, a deletion) is given: the one path that writes sessions through the program,
and the commit of exactly the items the store's change log says the write touched."""
from __future__ import annotations

import dataclasses
from typing import Any

from memarch.errors import MemarchError
from memarch.pipeline.episodes import Episode
from memarch.pipeline.items import MemoryItem
from memarch.app.bulk import Session, plan_batch
from memarch.app.messages import conversation_episode
from memarch.app.vectors import item_vectors


class Transaction:
    """A write of a `Memory`, run inside the database's write transaction (SQLite's flock and
    ``BEGIN IMMEDIATE``, or PostgreSQL's advisory lock: one writer across processes) while
    `Memory._transaction` holds this process's writer turn, the program shared and the locks of the
    users written. Whatever the body does to the program is committed by `commit` or, on any
    error, rolled back with the database and the program rebuilt (`changed`).

    Example::

        def body(tx: Transaction) -> list[list[MemoryItem]]:
            return tx.write([Session("ana", messages=[{"speaker": "user", "text": "hi"}], when=now)])
        kept = memory._transaction(body, ["ana"])     # one commit, or nothing

    Args:
        db: the memory's database (`MemoryDB` or `PostgresDB`), inside its ``write()``.
        program: the `MemoryProgram`, caught up with every commit; its store logs its changes
            (`Store.log_changes`).
    """

    def __init__(self, db: Any, program: Any):
        self.db = db
        self.program = program
        self._log = program.store.log_changes()
        self._log.drain()  # anything logged before the write began is not this write's to commit
        self._changed = False

    @property
    def changed(self) -> bool:
        """Whether the program may hold changes of this write (episode counts, items): after a
        rollback it must be rebuilt from what is committed."""
        return self._changed or bool(self._log)

    def pending(self) -> list[tuple[str, str]]:
        """(user, id) of every item this write touched so far, in the order of its first touch."""
        return self._log.pending()

    def write(self, sessions: list[Session]) -> list[list[MemoryItem]]:
        """Each session as a new episode of its user: numbered (a number never reused), encoded
        (every text of the sessions embedded in one embedder call), written through the program (the
        manager curates against the whole memory) and kept with its messages. One session is a
        batch of one: an add, a bulk import and a correction all write through here, with the same
        items, ids and lineage. Returns each session's kept items."""
        written = {u: self.db.episode_count(u) for u in dict.fromkeys(s.user_id for s in sessions)}
        numbered = [self._episode(s) for s in sessions]
        out: list[list[MemoryItem]] = []
        for (n, episode), items in zip(numbered, plan_batch(self.program, [e for _, e in numbered])):
            ns = episode.namespace
            self.program.episodes_written[ns] = written[ns]  # the user's episodes before this one
            written[ns] += 1
            self._changed = True
            out.append(self.program.write(episode, items=items))
            self.db.save_episode(n, episode.to_dict())
        return out

    def _episode(self, session: Session) -> tuple[int, Episode]:
        n = self.db.new_episode(session.user_id, session.time)
        if session.episode is not None:
            ep = session.episode
            return n, dataclasses.replace(ep, id=ep.id or f"e{n}", namespace=session.user_id)
        return n, conversation_episode(session.messages, episode_id=f"e{n}", namespace=session.user_id,
                                       when=session.when)

    def commit(self) -> int:
        """Last, inside the database's transaction: the rows of every item the store's change log
        holds (created, merged, superseded, tombstoned) and their texts' vectors, under the next
        change number, which it returns."""
        seq = self.db.bump()
        rows = []
        store = self.program.store
        for ns, item_id in self._log.drain():
            item = store.get(item_id, ns, include_deleted=True)
            if item is None:  # stores tombstone, never forget: a missing item is a bug to see
                raise MemarchError(f"store lost item {item_id!r} of {ns!r} during a write")
            rows.append((ns, item_id, item.to_dict()))
        self._changed = self._changed or bool(rows)
        self.db.upsert(rows, seq)
        self.db.put_vectors(item_vectors(self.program.resources.embedder, rows))
        return seq

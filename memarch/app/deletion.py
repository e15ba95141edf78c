"""What a deletion removed and what was checked to be gone: `DeletionReport` (what
`Memory.delete_verified`, ``DELETE /v1/users/U[/memories/I]`` and MCP's ``delete_memory`` answer),
the checks of the database and of one process's store, indexes and memos, and `DeletionUnverified`,
raised when a check finds something left."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from memarch.pipeline.registry import REGISTRY

DATABASE, PROCESS = "database", "process"


@dataclass(frozen=True)
class Removed:
    """Rows a deletion removed from the database, counted by its own DELETE statements inside its
    transaction. Lineage and provenance live in each item's row, so they go with ``items``; the
    import marks (`Memory.import_progress`) belong to a file, not to a user, and stay."""

    items: int = 0
    episodes: int = 0
    messages: int = 0  # the turns (or agent steps) the removed episodes held
    vectors: int = 0
    users: int = 0  # the user's own row (their episode counter)

    def to_dict(self) -> dict[str, int]:
        return {"items": self.items, "episodes": self.episodes, "messages": self.messages,
                "vectors": self.vectors, "users": self.users}


@dataclass(frozen=True)
class Check:
    """One look for what a deletion should have left nowhere: ``where`` (`DATABASE`: in the delete's
    own transaction, after its statements; `PROCESS`: this process's store, indexes and memos),
    ``what`` was looked for, and how many were found (``left``; 0 when the deletion is verified)."""

    where: str
    what: str
    left: int

    def to_dict(self) -> dict[str, Any]:
        return {"where": self.where, "what": self.what, "left": self.left}


@dataclass(frozen=True)
class DeletionReport:
    """What one deletion did and what was checked afterwards.

    Example::

        report = memory.delete_verified(user_id="bob")
        report.removed.items, report.removed.messages, report.verified    # 3, 5, True
        report.to_dict()["checks"][0]    # {"where": "database", "what": "rows of items", "left": 0}

    Args:
        user_id: whose data.
        item_id: the item deleted; None for the whole user.
        tombstoned: items marked ``deleted`` (their rows stay, with their history): 1 for an item
            deleted now, 0 for one deleted already and for a user's deletion.
        removed: rows removed from the database (`Removed`).
        checks: every `Check` made, each with nothing left (a check that finds something raises
            `DeletionUnverified` instead of giving a report).
    """

    user_id: str
    item_id: str | None
    tombstoned: int
    removed: Removed
    checks: tuple[Check, ...] = field(default_factory=tuple)

    @property
    def deleted(self) -> int:
        """Items affected: what `Memory.delete` returns (tombstoned or removed)."""
        return self.tombstoned + self.removed.items

    @property
    def verified(self) -> bool:
        return all(c.left == 0 for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {"deleted": self.deleted, "user_id": self.user_id, "item_id": self.item_id,
                "tombstoned": self.tombstoned, "removed": self.removed.to_dict(), "verified": self.verified,
                "checks": [c.to_dict() for c in self.checks]}


class DeletionUnverified(RuntimeError):
    """A deletion's check found something left: a bug, never the caller's input (the server answers
    500 with this message). ``committed``: whether the database's deletion was committed (a
    database check fails inside the transaction, which is rolled back: nothing was deleted)."""

    def __init__(self, user_id: str, item_id: str | None, failed: list[Check], *, committed: bool):
        what = f"item {item_id!r} of user {user_id!r}" if item_id is not None else f"user {user_id!r}"
        found = "; ".join(f"{c.where}: {c.what}: {c.left}" for c in failed)
        then = ("the database's deletion was committed, this process still holds it" if committed
                else "the deletion was rolled back, nothing was deleted")
        super().__init__(f"deleting {what} left something behind ({found}); {then}")
        self.user_id, self.item_id, self.failed, self.committed = user_id, item_id, failed, committed


def confirm(checks: list[Check], user_id: str, item_id: str | None, *, committed: bool) -> list[Check]:
    """``checks`` when each found nothing; else `DeletionUnverified` naming those that did."""
    failed = [c for c in checks if c.left]
    if failed:
        raise DeletionUnverified(user_id, item_id, failed, committed=committed)
    return checks


# -- the database (inside the deletion's own write transaction) ------------------------------------
def user_rows_left(db: Any, user_id: str) -> list[Check]:
    """The user's rows in every table that holds a user's data."""
    return [Check(DATABASE, f"rows of {table}", n) for table, n in db.leftovers(user_id).items()]


def item_rows_left(db: Any, user_id: str, item_id: str, vector_key: str | None) -> list[Check]:
    """The item's row, if still active; with ``vector_key`` (the deletion removed its text's
    vector), that vector's row."""
    active = sum(1 for row in db.find(item_id, user_id) if row.get("status") == "active")
    checks = [Check(DATABASE, "active rows of the item", active)]
    if vector_key is not None:
        checks.append(Check(DATABASE, "vectors of the item's text", db.vector_count(user_id, vector_key)))
    return checks


# -- this process ------------------------------------------------------------------------------------
def user_held(program: Any, user_id: str, texts: Iterable[str] | None = None) -> list[Check]:
    """What ``program`` (rebuilt from the database) holds of the user: records in its store (so in
    no index built from it) and episodes it counts; with ``texts`` (the deleted items' and messages'
    texts), those in its embedder's memo that no remaining item holds."""
    store = program.store
    checks = [Check(PROCESS, "records of the user in the store (any status)",
                    store.count(user_id, include_deleted=True)),
              Check(PROCESS, "episodes of the user counted by the program", program.episodes_written.get(user_id, 0))]
    if texts is not None:
        kept = {it.text for ns in store.namespaces() for it in store.list(ns, include_deleted=True)}
        theirs = [t for t in texts if t not in kept]
        checks.append(Check(PROCESS, "vectors of the user's texts in the embedder's memo",
                            len(program.resources.embedder.held(theirs))))
    return checks


def item_held(program: Any, user_id: str, item_id: str, text: str) -> list[Check]:
    """Whether the item is still active in ``program``'s store and, where the store keeps a dense
    index (its registration says ``needs_embeddings``), among that index's hits for its own text
    (every active item of the user asked for, so an index that still held it would return it)."""
    store = program.store
    checks = [Check(PROCESS, "the item, active in the store", int(store.get(item_id, user_id) is not None))]
    if REGISTRY.get("store", program.architecture.store).needs_embeddings:
        n = store.count(user_id)
        hits = store.search(program.resources.embedder.embed_one(text), n, user_id) if n else []
        checks.append(Check(PROCESS, "the item among the dense index's hits for its text",
                            sum(1 for it, _ in hits if it.id == item_id)))
    return checks

"""`Memory.update`: correct one memory item. The new text goes through the program like a new
message (encoders, then the manager's dedup and conflict rules); the old item is superseded by
what it wrote, never deleted, and both ends of the correction are in the lineage."""
from __future__ import annotations

import datetime as dt
from typing import Any

from memarch.errors import NotFoundError
from memarch.pipeline.items import MemoryItem, Usage, make_item_id
from memarch.app.bulk import Session
from memarch.app.transaction import Transaction

ACTOR = "app"
REASON = "updated by the app"


def correct(tx: Transaction, item_id: str, namespace: str, text: str, when: dt.datetime) -> list[MemoryItem]:
    """The body of `Memory.update`, given its `Transaction`: supersede ``item_id`` of
    ``namespace`` with ``text``.

    Returns the items the write kept. The old item is tombstoned *before* the write, so the
    manager cannot merge the correction back into the text it corrects.
    """
    store = tx.program.store
    old = store.get(item_id, namespace)
    if old is None:
        gone = store.get(item_id, namespace, include_deleted=True)
        why = f" (it is {gone.status}{_successor(gone)})" if gone is not None else ""
        raise NotFoundError(f"no active memory item {item_id!r} of user {namespace!r}{why}")
    at = when.isoformat()
    store.delete(item_id, namespace, reason=REASON, actor=ACTOR, at=at, status="superseded")
    if tx.program.family == "experience":
        kept = _replace_text(tx.program, old, text, at)
    else:
        said = [{"speaker": _speaker(tx.db, old), "text": text}]
        kept = tx.write([Session(user_id=namespace, messages=said, when=when)])[0]
    for item in kept:
        item.log("updated_from", ACTOR, REASON, [old.id], at, text=old.text)
        item.fields["updated_from"] = old.id
        store.update(item)
    # What replaced it: the new items, or the item the manager merged the correction into.
    successors = [it.id for it in kept] or [iid for ns, iid in tx.pending()
                                            if ns == namespace and iid != old.id and store.get(iid, ns) is not None]
    old.lineage[-1].related = successors
    store.update(old)
    return kept


def _replace_text(program: Any, old: MemoryItem, text: str, at: str) -> list[MemoryItem]:
    """Experience programs: a copy of the item with the new text, through the manager's insert rules."""
    new = old.copy()
    new.text, new.status, new.lineage, new.usage = text, "active", [], Usage()  # untried text
    new.id = make_item_id(old.kind, old.episode_id, text, "updated", at)
    new.log("created", ACTOR, REASON, [old.id], at)
    kept = program.manager.on_insert([new], program.store)
    if kept:
        program.store.add(kept)
    return kept


def _speaker(db: Any, item: MemoryItem) -> str:
    """Who said the corrected message: the speaker of the item's first source turn, else "user"."""
    episode = db.episode(item.episode_id, item.namespace) if item.episode_id else None
    for turn in (episode or {}).get("turns", []):
        if turn.get("id") in item.source_ids:
            return str(turn.get("speaker") or "user")
    return "user"


def _successor(item: MemoryItem) -> str:
    last = next((e for e in reversed(item.lineage) if e.action == "superseded_by" and e.related), None)
    return f"; its successor is {', '.join(last.related)}" if last is not None else ""

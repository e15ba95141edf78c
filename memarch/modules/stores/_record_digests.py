"""`RecordDigests`: each record's share of `Store.state_digest` — the sha256 of the record's plain-value
state (usage and lineage included) — remembered between digests, so a digest at every read point
hashes only the records that changed since the last one instead of the whole namespace again."""
from __future__ import annotations

import hashlib
import marshal
from typing import Any, Callable, Iterable, Mapping

from memarch.pipeline.items import MemoryItem

# A store's journal read: the ids written in a namespace since a version, None when it cannot say.
ChangesSince = Callable[[str, int], "Iterable[str] | None"]

# marshal: a C serialiser of plain values that refuses anything else (ValueError), so equal bytes
# mean equal values; version 2 writes no back-references (the bytes do not depend on sharing).
MARSHAL_VERSION = 2


def record_state(item: MemoryItem, actors: Mapping[str, str]) -> tuple:
    """One record as plain values: everything a read may look at, usage and lineage included."""
    lineage = [(e.action, actors.get(e.actor, e.actor), e.reason, e.related, e.at, e.data) for e in item.lineage]
    return (item.id, item.text, item.kind, item.fields, item.episode_id, item.source_ids, item.outcome,
            item.event_time, item.namespace, item.key, item.status, vars(item.usage), lineage)


class RecordDigests:
    """Per namespace: record id -> (the record object, its check, the sha256 of its state).

    An entry is reused only while three things hold: the store's journal names no write of the id
    since the entry was made, the record is the same object, and its check is unchanged — status,
    lineage length, usage counters, field and source counts, text: what an in-place change that no
    store write announced almost always moves (every manager action appends to the lineage, feedback
    moves the usage). Anything else recomputes it from `record_state`. A digest from here is therefore the one a full rehash
    gives (tests/modules/test_record_digests.py replays every LM-free manager both ways).

    Example::

        digests = RecordDigests()
        digests.of(records, "alice", store.version("alice"), store.changes_since,
                   {"manager:lightweight": "manager:*"})   # [sha256 bytes per record]
    """

    def __init__(self) -> None:
        self._memo: dict[str, tuple[tuple, int, dict[str, tuple[MemoryItem, tuple, bytes]]]] = {}

    def clear(self) -> None:
        self._memo.clear()

    def of(self, records: Mapping[str, MemoryItem], namespace: str, version: int,
           changes_since: ChangesSince, actors: Mapping[str, str]) -> list[bytes]:
        """The sha256 of each record's state in storage order (inactive records included):
        ``records`` is the namespace's id -> record at store ``version``, ``changes_since`` the
        store's journal read. Raises ValueError when a record holds a value marshal cannot write."""
        actors_key = tuple(sorted(actors.items()))
        memo = self._entries(changes_since, namespace, actors_key)
        out: list[bytes] = []
        state: Callable[..., Any] = record_state
        for iid, item in records.items():
            u = item.usage  # the check (see the class), inline: this runs for every record at every read point
            check = (item.status, len(item.lineage), u.retrieved, u.helped_success, u.helped_failure, u.strength,
                     u.last_used, len(item.fields), len(item.source_ids), item.text)
            entry = memo.get(iid)
            if entry is None or entry[0] is not item or entry[1] != check:
                digest = hashlib.sha256(marshal.dumps(state(item, actors), MARSHAL_VERSION)).digest()
                memo[iid] = entry = (item, check, digest)
            out.append(entry[2])
        if len(memo) > len(records):  # ids the namespace no longer holds
            for iid in [i for i in memo if i not in records]:
                del memo[iid]
        self._memo[namespace] = (actors_key, version, memo)
        return out

    def _entries(self, changes_since: ChangesSince, namespace: str, actors_key: tuple) -> dict[str, tuple[MemoryItem, tuple, bytes]]:
        """The namespace's entries with every id the journal says was written since dropped."""
        held = self._memo.get(namespace)
        if held is None or held[0] != actors_key:
            return {}
        _, version, memo = held
        changed = changes_since(namespace, version)
        if changed is None:  # a load, or more writes than the journal keeps
            return {}
        for iid in changed:
            memo.pop(iid, None)
        return memo

"""`ChangeJournal`: which items of a namespace each write touched, so caches keyed on the store's
version (BM25, dense rows) catch up on the few items that changed instead of rebuilding."""
from __future__ import annotations

from bisect import bisect_right

# Ids kept per namespace; a cache further behind than this rebuilds, which is then no dearer.
MAX_IDS = 8192


class ChangeJournal:
    """Per namespace: (version after the write, ids it touched), oldest first, bounded.

    Example::

        journal = ChangeJournal()
        journal.record("alice", 1, ["tip-1", "tip-2"])
        journal.record("alice", 2, ["tip-1"])
        journal.since("alice", 1)      # ["tip-1"]
        journal.reset("alice", 3)      # a load: nothing older than version 3 can be replayed
        journal.since("alice", 2)      # None: rebuild

    Args:
        max_ids: ids kept per namespace before the oldest writes are forgotten.
    """

    def __init__(self, max_ids: int = MAX_IDS):
        self.max_ids = int(max_ids)
        self._versions: dict[str, list[int]] = {}
        self._ids: dict[str, list[list[str]]] = {}
        self._kept: dict[str, int] = {}
        self._floor: dict[str, int] = {}  # the oldest version the journal can replay from

    def record(self, namespace: str, version: int, ids: list[str]) -> None:
        """The write that produced ``version`` touched ``ids`` (no ids: nothing a cache holds changed)."""
        if not ids:
            return
        self._versions.setdefault(namespace, []).append(version)
        self._ids.setdefault(namespace, []).append(list(ids))
        self._kept[namespace] = self._kept.get(namespace, 0) + len(ids)
        if self._kept[namespace] > 2 * self.max_ids:
            self._forget(namespace)

    def _forget(self, namespace: str) -> None:
        versions, ids = self._versions[namespace], self._ids[namespace]
        drop, kept = 0, self._kept[namespace]
        while drop < len(ids) and kept > self.max_ids:
            kept -= len(ids[drop])
            drop += 1
        self._floor[namespace] = versions[drop - 1]
        del versions[:drop], ids[:drop]
        self._kept[namespace] = kept

    def reset(self, namespace: str, version: int) -> None:
        """Forget everything before ``version`` (the records were replaced wholesale)."""
        self._versions.pop(namespace, None)
        self._ids.pop(namespace, None)
        self._kept.pop(namespace, None)
        self._floor[namespace] = version

    def since(self, namespace: str, version: int) -> list[str] | None:
        """Ids touched after ``version``, each once, in the order of their last touch; None when
        the journal no longer reaches back to ``version``."""
        if version < self._floor.get(namespace, 0):
            return None
        versions = self._versions.get(namespace, [])
        start = bisect_right(versions, version)
        if start == len(versions):
            return []
        out: dict[str, None] = {}
        for ids in self._ids[namespace][start:]:
            for iid in ids:
                out.pop(iid, None)
                out[iid] = None
        return list(out)

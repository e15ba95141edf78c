"""`ChangeLog`: the items a store's writes touched since the log was last drained, so that whoever
persists the store elsewhere (a `Memory`'s database) writes exactly those rows."""
from __future__ import annotations


class ChangeLog:
    """(namespace, ids) per store call, oldest first; drained as (namespace, id) pairs, each once.

    Example::

        log = ChangeLog()
        log.record("alice", ["tip-1", "tip-2"])
        log.record("alice", ["tip-1"])
        log.drain()         # [("alice", "tip-1"), ("alice", "tip-2")]; the log is empty again

    Recording appends one tuple per call, nothing else: the write path it sits on stays as cheap
    as it was; the work (dropping repeats) happens once per drain.
    """

    __slots__ = ("_writes",)

    def __init__(self) -> None:
        self._writes: list[tuple[str, list[str]]] = []

    def record(self, namespace: str, ids: list[str]) -> None:
        """A call touched ``ids`` of ``namespace`` (the caller hands over the list)."""
        self._writes.append((namespace, ids))

    def pending(self) -> list[tuple[str, str]]:
        """(namespace, id) of every item touched since the last drain, each once, in the order of
        its first touch (the order a database gives new rows: the order they were first written)."""
        return list(dict.fromkeys((ns, iid) for ns, ids in self._writes for iid in ids))

    def drain(self) -> list[tuple[str, str]]:
        """`pending`, and the log emptied."""
        out = self.pending()
        self._writes.clear()
        return out

    def __bool__(self) -> bool:
        return bool(self._writes)

"""`MemoryItem`: what memory keeps, with the provenance and lineage that let a failure be traced
back to the encoder that wrote it and the manager actions that changed it."""
from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass, field
from typing import Any

OUTCOMES = ("success", "failure", "unknown")
STATUSES = ("active", "superseded", "deleted")


def make_item_id(kind: str, episode_id: str | None, text: str, *extra: str) -> str:
    """Deterministic id: the same encoder output for the same episode gets the same id."""
    h = hashlib.sha256("\x1f".join([kind, episode_id or "", text, *extra]).encode("utf-8")).hexdigest()
    return f"{kind}-{h[:16]}"


@dataclass
class LineageEntry:
    """One thing a manager (or an encoder, on creation) did to an item."""

    action: str  # created | updated | merged_from | superseded_by | deleted | promoted | boosted | ...
    actor: str  # module name, e.g. "encoder:fact" or "manager:json_full"
    reason: str = ""
    related: list[str] = field(default_factory=list)  # ids of the other items involved
    at: str | None = None  # event time or logical clock from the data, never the wall clock
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"action": self.action, "actor": self.actor, "reason": self.reason, "related": list(self.related),
                "at": self.at, "data": json_copy(self.data)}

    def clone(self) -> "LineageEntry":
        """A deep copy, as ``from_dict(to_dict())`` makes it, without the round trip."""
        new = object.__new__(LineageEntry)
        new.__dict__.update(self.__dict__, related=list(self.related), data=json_copy(self.data))
        return new

    @classmethod
    def from_dict(cls, d: dict) -> "LineageEntry":
        return cls(action=d["action"], actor=d.get("actor", ""), reason=d.get("reason", ""),
                   related=list(d.get("related", [])), at=d.get("at"), data=dict(d.get("data", {})))


@dataclass
class Usage:
    """Usage statistics a manager maintains (access counts, success feedback, a utility strength)."""

    retrieved: int = 0
    helped_success: int = 0
    helped_failure: int = 0
    strength: float = 1.0
    last_used: str | None = None  # logical time of last retrieval

    def to_dict(self) -> dict:
        return {"retrieved": self.retrieved, "helped_success": self.helped_success,
                "helped_failure": self.helped_failure, "strength": self.strength, "last_used": self.last_used}

    @classmethod
    def from_dict(cls, d: dict) -> "Usage":
        return cls(**{k: d[k] for k in ("retrieved", "helped_success", "helped_failure", "strength", "last_used")
                      if k in d})


@dataclass
class MemoryItem:
    """A unit of memory. ``kind`` is the encoder that wrote it; ``fields`` its structured output.

    Provenance: ``episode_id`` and ``source_ids`` (step or turn ids) say where it came from,
    ``event_time`` when it happened (from the data), ``outcome`` how that episode ended.
    ``key`` (e.g. ``"caroline|job"``) lets a newer item supersede an older one with the same key.
    """

    text: str
    kind: str
    id: str = ""
    fields: dict[str, Any] = field(default_factory=dict)
    episode_id: str | None = None
    source_ids: list[str] = field(default_factory=list)
    outcome: str = "unknown"
    event_time: str | None = None
    namespace: str = "default"
    key: str | None = None
    status: str = "active"
    usage: Usage = field(default_factory=Usage)
    lineage: list[LineageEntry] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.id:
            self.id = make_item_id(self.kind, self.episode_id, self.text)
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}, got {self.outcome!r}")
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")

    @property
    def active(self) -> bool:
        return self.status == "active"

    def cited_ids(self) -> list[str]:
        """What the item cites: its turn or step ids and the episode it came from (agent benchmarks
        name whole episodes as gold; dialogue benchmarks name turns)."""
        return [*self.source_ids, self.episode_id] if self.episode_id else list(self.source_ids)

    def log(self, action: str, actor: str, reason: str = "", related: list[str] | None = None,
            at: str | None = None, **data: Any) -> LineageEntry:
        entry = LineageEntry(action, actor, reason, list(related or []), at, dict(data))
        self.lineage.append(entry)
        return entry

    def to_dict(self) -> dict:
        """What ``dataclasses.asdict`` gives (same keys, order and deep copies), built by hand: asdict
        dominated the cost of persisting a write."""
        return {"text": self.text, "kind": self.kind, "id": self.id, "fields": json_copy(self.fields),
                "episode_id": self.episode_id, "source_ids": list(self.source_ids), "outcome": self.outcome,
                "event_time": self.event_time, "namespace": self.namespace, "key": self.key,
                "status": self.status, "usage": self.usage.to_dict(),
                "lineage": [e.to_dict() for e in self.lineage]}

    @classmethod
    def from_dict(cls, d: dict) -> "MemoryItem":
        return cls(
            text=d["text"], kind=d["kind"], id=d.get("id", ""), fields=dict(d.get("fields", {})),
            episode_id=d.get("episode_id"), source_ids=list(d.get("source_ids", [])),
            outcome=d.get("outcome", "unknown"), event_time=d.get("event_time"),
            namespace=d.get("namespace", "default"), key=d.get("key"), status=d.get("status", "active"),
            usage=Usage.from_dict(d.get("usage", {})),
            lineage=[LineageEntry.from_dict(e) for e in d.get("lineage", [])],
        )

    def copy(self) -> "MemoryItem":
        return MemoryItem.from_dict(self.to_dict())

    def clone(self) -> "MemoryItem":
        """A deep copy equal to `copy`'s (no mutable part shared) without the dict round trip: what a
        trial makes of each item its encoders remembered from an earlier trial."""
        new = object.__new__(MemoryItem)
        u = self.usage
        usage = object.__new__(Usage)
        usage.__dict__.update(u.__dict__)
        new.__dict__.update(self.__dict__, fields=json_copy(self.fields), source_ids=list(self.source_ids),
                            usage=usage, lineage=[e.clone() for e in self.lineage])
        return new


def json_copy(d: dict) -> dict:
    """A deep copy of a JSON-like dict (the common flat case without `copy.deepcopy`'s cost)."""
    if all(v is None or isinstance(v, (str, int, float, bool)) for v in d.values()):
        return dict(d)
    return copy.deepcopy(d)

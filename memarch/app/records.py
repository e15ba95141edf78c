"""`MemoryRecord`: one memory item as an app (or a client of the server) sees it — text, score,
provenance and lineage."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memarch.pipeline.items import MemoryItem, json_copy


@dataclass
class MemoryRecord:
    """One memory item as an app sees it: what it says, how it scored, where it came from.

    Example::

        hit = memory.search("where does Ana work?", user_id="ana")[0]
        hit.text, hit.score, hit.encoder, hit.episode_id, hit.source_ids, hit.merged_from

    Args:
        id: the item id (for `Memory.history`, `Memory.delete`).
        text: the memory's text.
        user_id: whose memory it is.
        encoder: the encoder that wrote it (``turn``, ``fact``, ...).
        score: the retriever's score (None outside a search).
        episode_id: the `add` call it came from (``e12``); source_ids: its turns (``e12:0``).
        event_time: when it happened (the add's timestamp, or the date the encoder found).
        status: ``active``, ``superseded`` or ``deleted``.
        lineage: what encoders and the manager did to it, oldest first.
        fields: the encoder's structured output.
    """

    id: str
    text: str
    user_id: str
    encoder: str
    score: float | None = None
    episode_id: str | None = None
    source_ids: list[str] = field(default_factory=list)
    event_time: str | None = None
    status: str = "active"
    lineage: list[dict[str, Any]] = field(default_factory=list)
    fields: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, item: MemoryItem, score: float | None = None) -> "MemoryRecord":
        d = item.to_dict()
        return cls(id=item.id, text=item.text, user_id=item.namespace, encoder=item.kind, score=score,
                   episode_id=item.episode_id, source_ids=list(item.source_ids), event_time=item.event_time,
                   status=item.status, lineage=d["lineage"], fields=d["fields"])

    @property
    def merged_from(self) -> list[str]:
        """Ids of the items the manager merged into this one."""
        return [i for e in self.lineage if e["action"] == "merged_from" for i in e["related"]]

    @property
    def updated_from(self) -> str | None:
        """The id of the item this one corrected (`Memory.update`), if any; its old text is in the
        ``updated_from`` lineage entry's ``data["text"]``."""
        return next((e["related"][0] for e in self.lineage if e["action"] == "updated_from" and e["related"]), None)

    def to_dict(self) -> dict[str, Any]:
        """What ``dataclasses.asdict`` gives (fresh lists and dicts), built by hand: asdict's deep
        copy was most of the cost of serving a search."""
        return {"id": self.id, "text": self.text, "user_id": self.user_id, "encoder": self.encoder,
                "score": self.score, "episode_id": self.episode_id, "source_ids": list(self.source_ids),
                "event_time": self.event_time, "status": self.status,
                "lineage": [{**e, "related": list(e["related"]), "data": json_copy(e["data"])} for e in self.lineage],
                "fields": json_copy(self.fields)}

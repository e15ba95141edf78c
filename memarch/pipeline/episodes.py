"""What happened (an `Episode`: a dialogue session or an agent trajectory) and what is asked
(a `Query`). Benchmarks produce these; `MemoryProgram.write` / `read` consume them."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from memarch.pipeline.items import json_copy


@dataclass
class Turn:
    """One dialogue turn. ``id`` is the dataset's id (LoCoMo ``D3:7``) used as gold evidence."""

    id: str
    speaker: str
    text: str
    date: str | None = None  # ISO date (YYYY-MM-DD) of the session it belongs to
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Step:
    """One agent step: the action taken and what the environment answered."""

    id: str
    action: str
    observation: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Episode:
    """A dialogue session (``turns``) or an agent trajectory (``task`` + ``steps`` + ``outcome``)."""

    id: str
    task: str = ""
    steps: list[Step] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    outcome: str = "unknown"  # success | failure | unknown
    time: str | None = None  # ISO date or datetime from the data
    namespace: str = "default"
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def family(self) -> str:
        return "conversation" if self.turns and not self.steps else "experience"

    def to_dict(self) -> dict:
        """What ``dataclasses.asdict`` gives, built by hand (it deep-copies field by field, slowly)."""
        return {"id": self.id, "task": self.task,
                "steps": [{"id": s.id, "action": s.action, "observation": s.observation,
                           "metadata": json_copy(s.metadata)} for s in self.steps],
                "turns": [{"id": t.id, "speaker": t.speaker, "text": t.text, "date": t.date,
                           "metadata": json_copy(t.metadata)} for t in self.turns],
                "outcome": self.outcome, "time": self.time, "namespace": self.namespace,
                "metadata": json_copy(self.metadata)}

    @classmethod
    def from_dict(cls, d: dict) -> "Episode":
        return cls(
            id=str(d["id"]), task=d.get("task", ""),
            steps=[Step(**s) for s in d.get("steps", [])],
            turns=[Turn(**t) for t in d.get("turns", [])],
            outcome=d.get("outcome", "unknown"), time=d.get("time"),
            namespace=d.get("namespace", "default"), metadata=dict(d.get("metadata", {})),
        )

    def content_hash(self) -> str:
        """Hash of everything an encoder may read (the namespace is not content)."""
        # Built by hand: dataclasses.asdict deep-copies and dominated warm-cache encoding time.
        d = {"id": self.id, "task": self.task, "outcome": self.outcome, "time": self.time,
             "metadata": self.metadata,
             "steps": [[s.id, s.action, s.observation, s.metadata] for s in self.steps],
             "turns": [[t.id, t.speaker, t.text, t.date, t.metadata] for t in self.turns]}
        return hashlib.sha256(json.dumps(d, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()

    def text(self) -> str:
        if self.turns:
            return "\n".join(f"{t.speaker}: {t.text}" for t in self.turns)
        lines = [f"Task: {self.task}"] + [f"> {s.action}\n{s.observation}" for s in self.steps]
        return "\n".join(lines)


@dataclass
class Query:
    """A question or a task to retrieve memory for.

    ``episode_id`` is the episode being answered: items written by it are never returned.
    """

    text: str
    id: str = ""
    episode_id: str | None = None
    namespace: str = "default"
    time: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

"""What a benchmark holds: dialogues (sessions to write, questions to ask about them) or agent tasks,
and where a file-backed benchmark finds its data."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memarch.errors import DataError
from memarch.pipeline.episodes import Episode


@dataclass
class Question:
    """One question of a dialogue, with its gold answer and gold evidence (turn ids).

    ``answer`` is None for an unanswerable (adversarial) question: excluded from the LM-free
    recall, scored only with an LM reader.
    """

    id: str
    text: str
    answer: str | None
    evidence: list[str] = field(default_factory=list)
    category: str = ""
    time: str | None = None
    ask_after: int | None = None  # session index after which it is asked (None: once evidence is written)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def answerable(self) -> bool:
        return self.answer is not None and self.category != "adversarial"


@dataclass
class Dialogue:
    """One unit of a stream benchmark: a namespace (conversation or story), its sessions in time
    order, and the questions asked about it."""

    namespace: str
    sessions: list[Episode]
    questions: list[Question]
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def turn_count(self) -> int:
        return sum(len(s.turns) for s in self.sessions)


@dataclass
class AgentTask:
    """One agent task of a collection -> deployment benchmark (e.g. a TextWorldExpress game)."""

    id: str
    text: str
    namespace: str = "default"
    metadata: dict[str, Any] = field(default_factory=dict)


def data_root(data: "str | os.PathLike | None", dataset: str, what: str) -> Path:
    """``data`` as a path, else ``$MEMARCH_DATA_DIR``; one `DataError` line naming ``what`` to pass
    (e.g. ``"--data PATH to the bAbI directory"``) when neither is given."""
    if data is None:
        root = os.environ.get("MEMARCH_DATA_DIR")
        if not root:
            raise DataError(f"{dataset}: no data path given (pass {what} or set MEMARCH_DATA_DIR)")
        data = root
    return Path(data)

"""What a `Memory` write takes: `Session`s (an `add` is a batch of one; `add_many`'s sessions are
checked and normalised before anything is written), and a batch's encoding with every embedding
computed in one call (`Transaction.write`)."""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Iterable

from memarch.errors import MemarchError
from memarch.pipeline.episodes import Episode
from memarch.pipeline.items import MemoryItem
from memarch.app.messages import as_messages, as_time, as_user

BATCH = 256  # sessions per transaction: one embedder call and one commit each
_SESSION_KEYS = {"messages", "user_id", "timestamp"}


@dataclass
class Session:
    """One session to write: messages of a user at a time, or a ready `Episode`."""

    user_id: str
    messages: list[dict[str, str]] | None = None
    when: dt.datetime | None = None
    episode: Episode | None = None

    @property
    def time(self) -> str | None:
        return self.episode.time if self.episode is not None else self.when.isoformat()


def sessions_of(sessions: Iterable[Any], user_id: str, *, conversation: bool = True) -> list[Session]:
    """Every session checked and normalised (one `MemarchError` line naming the first bad one).

    Args:
        sessions: each a message value `Memory.add` takes, a dict ``{"messages", "user_id",
            "timestamp"}`` (only ``messages`` required), or an `Episode`.
        user_id: the user of a session that does not name one.
        conversation: whether the program reads messages (an experience program takes Episodes only).
    """
    if isinstance(sessions, (str, dict)) or not isinstance(sessions, Iterable):
        raise MemarchError("sessions: expected a list (or iterable) of sessions, each what add() takes, "
                           f"a {{'messages', 'user_id', 'timestamp'}} dict or an Episode; got {type(sessions).__name__}")
    out: list[Session] = []
    for i, raw in enumerate(sessions):
        try:
            out.append(_session(raw, user_id, conversation))
        except MemarchError as exc:
            raise MemarchError(f"sessions[{i}]: {exc}") from None
    return out


def _session(raw: Any, user_id: str, conversation: bool) -> Session:
    if isinstance(raw, Episode):
        who = raw.namespace if raw.namespace != "default" else user_id
        return Session(user_id=as_user(who), episode=raw)
    if not conversation:
        raise MemarchError("an experience-family program reads agent steps: pass Episodes")
    if isinstance(raw, dict) and "messages" in raw:
        unknown = set(raw) - _SESSION_KEYS
        if unknown:
            raise MemarchError(f"unknown keys {sorted(unknown)} (a session has {sorted(_SESSION_KEYS)})")
        return Session(user_id=as_user(raw.get("user_id", user_id)), messages=as_messages(raw["messages"]),
                       when=as_time(raw.get("timestamp")))
    return Session(user_id=as_user(user_id), messages=as_messages(raw), when=as_time(None))


def plan_batch(program: Any, episodes: list[Episode]) -> list[list[MemoryItem]]:
    """What the program's encoders write for each episode, with the embeddings of all their texts
    computed in one embedder call (the manager's and the store's later lookups hit its memo)."""
    encoded = [program.encode(ep) for ep in episodes]
    texts = list(dict.fromkeys(it.text for items in encoded for it in items))
    embedder = program.resources.embedder
    if texts and embedder is not None:
        embedder.embed(texts)
    return encoded

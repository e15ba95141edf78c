"""What an app passes to `Memory.add` (a string, or mem0 / OpenAI-style ``{"role", "content"}``
messages, and a timestamp) made into the conversation `Episode` the program's encoders read."""
from __future__ import annotations

import datetime as dt
import re
from typing import Any

from memarch.errors import MemarchError
from memarch.pipeline.episodes import Episode, Turn

Messages = str | dict[str, Any] | list[dict[str, Any]] | list[str]


def as_messages(messages: Messages) -> list[dict[str, str]]:
    """Normalise to ``[{"speaker", "text"}]``; a bad shape is one MemarchError line."""
    if isinstance(messages, (str, dict)):
        messages = [messages]
    if not isinstance(messages, list) or not messages:
        raise MemarchError("messages: expected a string or a non-empty list of {'role', 'content'} dicts, "
                           f"got {type(messages).__name__}{' (empty)' if messages == [] else ''}")
    out = []
    for i, msg in enumerate(messages):
        if isinstance(msg, str):
            msg = {"role": "user", "content": msg}
        if not isinstance(msg, dict):
            raise MemarchError(f"messages[{i}]: expected a dict with 'role' and 'content', got {type(msg).__name__}")
        content = msg.get("content")
        if not isinstance(content, str) or not content.strip():
            raise MemarchError(f"messages[{i}]: 'content' must be a non-empty string")
        # A name (OpenAI's optional field) says who spoke better than the role does.
        speaker = msg.get("name") or msg.get("role") or "user"
        if not isinstance(speaker, str):
            raise MemarchError(f"messages[{i}]: 'role' / 'name' must be a string")
        out.append({"speaker": speaker, "text": content})
    return out


USER_ID_MAX = 200  # characters: one rule for `Memory`, the HTTP paths, /v1/bulk and the MCP tools
# Any character but a control character (C0, DEL, C1: a NUL or a newline in a path or a log line)
# and "/" (a path separator: such a user could be written by /v1/bulk but never read by a route).
USER_ID_PATTERN = r"^[^\x00-\x1f\x7f-\x9f/]*[^\x00-\x20\x7f-\x9f/][^\x00-\x1f\x7f-\x9f/]*$"
_USER_ID = re.compile(USER_ID_PATTERN)


def as_user(user_id: Any) -> str:
    """A user id: 1-`USER_ID_MAX` characters, not all blank, none of them a control character or
    "/" (one MemarchError line otherwise, the id shown cut short)."""
    if not isinstance(user_id, str) or not 0 < len(user_id) <= USER_ID_MAX or not _USER_ID.fullmatch(user_id) \
            or not user_id.strip():
        shown = repr(user_id[:40]) + ("..." if len(user_id) > 40 else "") if isinstance(user_id, str) else repr(user_id)
        raise MemarchError(f"user_id: expected 1-{USER_ID_MAX} characters, not all blank, without control "
                           f"characters or '/', got {shown}")
    return user_id


def as_time(timestamp: Any) -> dt.datetime:
    """A datetime (naive = UTC), a date, an ISO string or epoch seconds; None: now (UTC), the
    moment a live app adds the message."""
    if timestamp is None:
        return dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    if isinstance(timestamp, dt.datetime):
        return timestamp if timestamp.tzinfo else timestamp.replace(tzinfo=dt.timezone.utc)
    if isinstance(timestamp, dt.date):
        return dt.datetime(timestamp.year, timestamp.month, timestamp.day, tzinfo=dt.timezone.utc)
    if isinstance(timestamp, (int, float)) and not isinstance(timestamp, bool):
        return dt.datetime.fromtimestamp(timestamp, dt.timezone.utc)
    if isinstance(timestamp, str):
        try:
            return as_time(dt.datetime.fromisoformat(timestamp.strip().replace("Z", "+00:00")))
        except ValueError:
            pass
    raise MemarchError(f"timestamp: expected a datetime, a date, an ISO string or epoch seconds, got {timestamp!r}")


def conversation_episode(said: list[dict[str, str]], *, episode_id: str, namespace: str,
                         when: dt.datetime) -> Episode:
    """One session of turns ``{episode_id}:{i}`` (from `as_messages`), dated ``when``, in ``namespace``."""
    day = when.date().isoformat()
    turns = [Turn(id=f"{episode_id}:{i}", speaker=m["speaker"], text=m["text"], date=day)
             for i, m in enumerate(said)]
    return Episode(id=episode_id, turns=turns, time=when.isoformat(), namespace=namespace)

"""The HTTP API's request and response bodies (pydantic). Requests are strict and closed: an
unknown field, a number where text is expected or an over-long list is a 422 naming the field,
before anything is read or written."""
from __future__ import annotations

from typing import Annotated, Any, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, WrapValidator
from pydantic_core import PydanticCustomError

from memarch.app.messages import USER_ID_MAX, USER_ID_PATTERN, as_time
from memarch.errors import MemarchError

MAX_MESSAGES = 1000      # messages in one session
MAX_SESSIONS = 1000      # sessions in one bulk request
MAX_TEXT_CHARS = 100_000  # one message, an update's text, a query
MAX_LIMIT = 100          # search / context results
MAX_PAGE = 1000          # items in one page of a user's list
MAX_OFFSET = 10**9       # where a page starts: past any user's items, and a 64-bit integer in the answer
MAX_USER_CHARS = USER_ID_MAX  # and `USER_ID_PATTERN`: the one user-id rule (app/messages.py)

Text = Field(min_length=1, max_length=MAX_TEXT_CHARS, pattern=r"\S")


def _plainly(why: Any) -> WrapValidator:
    """A union's branches would each report an error; say once what is wrong (``why(value)``)."""
    def validate(value: Any, handler: Any) -> Any:
        try:
            return handler(value)
        except ValidationError:
            raise PydanticCustomError("invalid", why(value)) from None
    return WrapValidator(validate)


def _json_type(value: Any) -> str:
    return {bool: "a boolean", int: "a number", float: "a number", type(None): "null", list: "an array",
            dict: "an object", str: "a string"}.get(type(value), type(value).__name__)


def _when(value: Any) -> Any:
    """The memory's own check of a timestamp, so that a bad one is a 422 like any malformed field."""
    if value is not None:
        try:
            as_time(value)
        except (MemarchError, ValueError, OverflowError, OSError):
            raise PydanticCustomError("timestamp", "expected an ISO 8601 string or epoch seconds, got {value}",
                                      {"value": repr(value)}) from None
    return value


Timestamp = Annotated[Union[str, int, float, None], _plainly(
    lambda v: f"expected an ISO 8601 string or epoch seconds, got {_json_type(v)}"), AfterValidator(_when)]


class Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class Message(Request):
    """One chat message, mem0 / OpenAI shape; ``name``, when given, is the speaker instead of the role."""

    role: str = Field("user", min_length=1, max_length=64)
    content: str = Text
    name: str | None = Field(None, min_length=1, max_length=128)


MessageText = Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS, pattern=r"\S")]


def _why_not_messages(value: Any) -> str:
    items = [value] if isinstance(value, (str, dict)) else value if isinstance(value, list) else None
    if items is None:
        return f"expected a string, a {{role, content}} message or a list of them, got {_json_type(value)}"
    if not items or len(items) > MAX_MESSAGES:
        return f"expected 1 to {MAX_MESSAGES} messages, got {len(items)}"
    for i, m in enumerate(items):
        at = f"message {i}: " if isinstance(value, list) else ""
        if isinstance(m, str):
            if not m.strip() or len(m) > MAX_TEXT_CHARS:
                return f"{at}expected non-blank text of at most {MAX_TEXT_CHARS} characters"
        elif isinstance(m, dict):
            try:
                Message.model_validate(m)
            except ValidationError as exc:
                e = exc.errors()[0]
                return f"{at}{'.'.join(map(str, e['loc']))}: {e['msg']}"
        else:
            return f"{at}expected a string or a {{role, content}} message, got {_json_type(m)}"
    return "expected a string, a {role, content} message or a list of them"


MessageList = Annotated[list[Union[Message, MessageText]], Field(min_length=1, max_length=MAX_MESSAGES)]
Messages = Annotated[Union[MessageText, Message, MessageList], _plainly(_why_not_messages)]
_MESSAGES_DOC = ("a string, a {role, content} message, or a list of them (at most "
                 f"{MAX_MESSAGES}); one add is one session (episode)")
_TIMESTAMP_DOC = "ISO 8601 string or epoch seconds (naive = UTC); omitted: now"


class AddRequest(Request):
    """``POST /v1/users/{user_id}/memories``."""

    messages: Messages = Field(description=_MESSAGES_DOC)
    timestamp: Timestamp = Field(None, description=_TIMESTAMP_DOC)


class BulkSession(Request):
    """One session of a bulk add: whose, what was said, when."""

    user_id: str = Field(min_length=1, max_length=MAX_USER_CHARS, pattern=USER_ID_PATTERN)
    messages: Messages = Field(description=_MESSAGES_DOC)
    timestamp: Timestamp = Field(None, description=_TIMESTAMP_DOC)


class BulkRequest(Request):
    """``POST /v1/bulk``: several sessions, possibly of several users, in one call (``Memory.add_many``)."""

    sessions: list[BulkSession] = Field(min_length=1, max_length=MAX_SESSIONS)


class SearchRequest(Request):
    """``POST /v1/users/{user_id}/search`` and ``.../context``."""

    query: str = Text
    limit: int | None = Field(None, ge=1, le=MAX_LIMIT, description="default: the program's top_k")


class UpdateRequest(Request):
    """``PUT`` / ``PATCH /v1/users/{user_id}/memories/{item_id}``: the corrected text."""

    text: str = Text
    timestamp: Timestamp = Field(None, description=_TIMESTAMP_DOC)


class Record(BaseModel):
    """A memory item as `memarch.MemoryRecord` gives it."""

    id: str
    text: str
    user_id: str
    encoder: str = Field(description="the encoder that wrote it (turn, fact, ...)")
    score: float | None = Field(None, description="the retriever's score; null outside a search")
    episode_id: str | None = Field(None, description="the add it came from (e12)")
    source_ids: list[str] = Field(default_factory=list, description="its turns (e12:0)")
    event_time: str | None = None
    status: str = Field("active", description="active, superseded or deleted")
    lineage: list[dict[str, Any]] = Field(default_factory=list, description="what encoders and the manager did to it")
    fields: dict[str, Any] = Field(default_factory=dict, description="the encoder's structured output")


class Items(BaseModel):
    items: list[Record]


class BulkResult(BaseModel):
    sessions: int
    items: list[list[Record]] = Field(description="per session, the items the manager kept")


class Page(BaseModel):
    items: list[Record]
    total: int = Field(description="items of the user (with include_deleted: also superseded and deleted ones)")
    offset: int
    limit: int


class SearchResult(BaseModel):
    results: list[Record]


class ContextResult(BaseModel):
    context: str


class History(BaseModel):
    item_id: str
    history: list[dict[str, Any]]


class Source(BaseModel):
    item_id: str
    messages: list[dict[str, Any]] = Field(description="[{turn_id, speaker, text}] (steps, for an agent episode)")


class Removed(BaseModel):
    """Rows a deletion removed from the database, counted by its own DELETE statements in its
    transaction (a later ``pending_jobs`` count joins them when the memory gets background jobs)."""

    items: int = Field(description="item rows (every status; lineage and provenance are part of them)")
    episodes: int = Field(description="episode rows (one per add)")
    messages: int = Field(description="the messages (turns, or agent steps) those episodes held")
    vectors: int = Field(description="vector rows of the user's texts")
    users: int = Field(description="the user's own row (their episode counter)")


class Check(BaseModel):
    """One look for anything of the deleted user or item; ``left`` is 0 in every answer (anything
    else is a 500)."""

    where: str = Field(description="database (in the delete's own transaction) or process (this "
                                   "server process's store, indexes and memos)")
    what: str
    left: int


class Deleted(BaseModel):
    """What a delete removed, and the checks that nothing of it is left (docs/serving.md)."""

    deleted: int = Field(description="items affected: tombstoned + removed.items")
    user_id: str
    item_id: str | None = Field(description="the item deleted; null for a user's deletion")
    tombstoned: int = Field(description="items marked deleted now (their rows stay, with their history)")
    removed: Removed
    verified: bool = Field(description="every check found nothing (always true in a 200 answer)")
    checks: list[Check]


class Remains(BaseModel):
    """What this server process holds of a user, once caught up with every commit."""

    user_id: str
    pid: int = Field(description="the server process that answered (one of --workers)")
    remains: bool = Field(description="any check found something")
    checks: list[Check]


class Health(BaseModel):
    status: str
    program: str = Field(description="the program's architecture key")
    version: str


class Error(BaseModel):
    error: str

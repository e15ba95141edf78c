"""The MCP server over a `Memory`: five tools (``add_memory``, ``search_memory``, ``get_memory``,
``update_memory``, ``delete_memory``) an agent attaches over stdio or streamable HTTP, built on the
official ``mcp`` SDK's `MCPServer`.

An adapter over the serving core (core.py), as the HTTP API is: each tool's `Memory` call runs
under the core's thread policy (reads on the reader threads, writes on the writer's), so a slow add
never blocks the event loop; the user is checked by the one token check (checks.py), and what the
call raises is mapped as the API maps it (errors.py). Inputs are typed and strict as the HTTP API's
bodies are (pydantic: unknown arguments refused, no coercion: ``"limit": "3"`` is an error);
results are structured (`Item` = the `MemoryRecord` fields); a `MemarchError` (bad input, a
missing item, another user on a pinned server or outside the bearer token's users) becomes a tool
error carrying its one-line message, and the server keeps answering. docs/mcp.md.
"""
# No ``from __future__ import annotations``: the SDK reads the tools' signatures with eval_str.
import asyncio
import io
import ipaddress
import json
import logging
import os
import signal
import threading
from typing import Annotated, Any, Literal

import anyio
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from memarch.app.memory import Memory
from memarch.app.messages import USER_ID_MAX, USER_ID_PATTERN, as_user
from memarch.app.serve.auth import TokenAuth
from memarch.app.serve.checks import token_refusal
from memarch.app.serve.core import ServingCore
from memarch.app.serve.errors import Refusal, send_refusal
from memarch.app.serve.schemas import Deleted
from memarch.app.serve.server_log import clip
from memarch.errors import MemarchError

log = logging.getLogger(__name__)

MAX_TEXT = 100_000
MAX_MESSAGES = 1_000
MAX_LIMIT = 100

INSTRUCTIONS = (
    "Long-term memory of the user(s) you talk with, compiled by memarch. Save what is worth "
    "remembering with add_memory, look it up with search_memory before answering questions about "
    "the past, fix a wrong memory with update_memory (the old text is kept in its history) and "
    "remove one with delete_memory. Every call names the user_id whose memory it touches; users "
    "never see each other's memories.")


class Message(BaseModel):
    """One chat message (mem0 / OpenAI shape)."""

    model_config = ConfigDict(extra="forbid")
    role: Annotated[str, Field(description="Who spoke: 'user', 'assistant', ...", max_length=200)] = "user"
    content: Annotated[str, Field(description="What was said.", min_length=1, max_length=MAX_TEXT)]
    name: Annotated[str | None, Field(description="The speaker's name; when given, it is the speaker "
                                                  "instead of the role.", max_length=200)] = None


class Item(BaseModel):
    """One memory item: what it says, how it scored, where it came from."""

    id: str = Field(description="The item id (for get_memory, update_memory, delete_memory).")
    text: str = Field(description="The memory's text.")
    user_id: str = Field(description="Whose memory it is.")
    encoder: str = Field(description="The encoder that wrote it (turn, fact, ...).")
    score: float | None = Field(None, description="The retriever's score (search_memory only; higher is better).")
    episode_id: str | None = Field(None, description="The add it came from (e12).")
    source_ids: list[str] = Field(default_factory=list, description="The messages it was written from (e12:0).")
    event_time: str | None = Field(None, description="When it happened (the add's timestamp or a date in the text).")
    status: str = Field("active", description="active, superseded (updated or merged away) or deleted.")
    lineage: list[dict[str, Any]] = Field(default_factory=list,
                                          description="What the encoder and the manager did to it, oldest first.")
    merged_from: list[str] = Field(default_factory=list, description="Ids of items merged into this one.")

    @classmethod
    def of(cls, record: Any) -> "Item":
        """From a `MemoryRecord` (its encoder's ``fields`` left out)."""
        d = record.to_dict()
        return cls(**{k: d[k] for k in cls.model_fields if k in d}, merged_from=record.merged_from)


class Items(BaseModel):
    """Memory items, best first for a search."""

    items: list[Item]


class Updated(BaseModel):
    """What an update did."""

    updated: str = Field(description="The id of the item that was replaced (now superseded).")
    items: list[Item] = Field(description="The items written from the new text.")


UserId = Annotated[str, Field(
    description="Whose memory (each user's memories are separate). Required unless the server was "
                "started for one user, where it defaults to that user and any other id is refused.",
    min_length=1, max_length=USER_ID_MAX, pattern=USER_ID_PATTERN)]
ItemId = Annotated[str, Field(description="An item id from a previous result.", min_length=1, max_length=200)]
Timestamp = Annotated[str | None, Field(
    description="When it was said: an ISO-8601 date or datetime (naive = UTC). Default: now.", max_length=64)]
Text = Annotated[str, Field(min_length=1, max_length=MAX_TEXT)]


def build_mcp(memory: Memory, *, user_id: str | None = None, auth: TokenAuth | None = None,
              name: str = "memarch") -> MCPServer:
    """The `MCPServer` serving ``memory``'s five tools. ``user_id`` pins it to that user (a call for
    another user is refused, and ``user_id`` may be omitted); with ``auth`` (over http), a call for a
    user the request's bearer token may not act for is refused."""
    if user_id is not None:
        as_user(user_id)  # the one user-id rule
    instructions = INSTRUCTIONS + (f" This server serves only user {user_id!r}." if user_id else "")
    core = ServingCore(memory)

    async def call(run, fn, *args, **kwargs):
        """A `Memory` call on the core's threads (``run``: `core.read` or `core.write`); what it
        raises becomes the tool's error, the one line the HTTP API would answer."""
        try:
            return await run(fn, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - every failure is a tool error; the server goes on
            raise ToolError(core.refusal(exc, f"MCP {getattr(fn, '__name__', 'call')}").message) from None

    def whose(asked: str, ctx: Context) -> str:
        """``asked`` if this call may act for that user; refused before `Memory` is touched."""
        if user_id is not None and asked != user_id:
            raise ToolError(f"this server serves only user {user_id!r}, not {asked!r}")
        if auth is not None:
            request = ctx.request_context.request
            token = auth.authenticate(request.headers.get("authorization") if request is not None else None)
            if token is None:
                raise ToolError("missing or wrong bearer token")
            refusal = token_refusal(token, asked)
            if refusal:
                raise ToolError(refusal)
        return asked

    async def add_memory(*, text: Annotated[Text | None, Field(
                             description="One message from the user; give this or messages.")] = None,
                         messages: Annotated[list[Message] | None, Field(
                             description="A conversation session, oldest first; give this or text.",
                             min_length=1, max_length=MAX_MESSAGES)] = None,
                         user_id: UserId, timestamp: Timestamp = None, ctx: Context) -> Items:
        """Save something worth remembering about a user: one message (text) or a conversation
        session (messages, [{role, content}]). The compiled program decides what to keep (a repeat
        is merged into the existing item). Returns the items written, with their ids. Use it for
        facts, preferences and events the user tells you, not for your own reasoning."""
        if (text is None) == (messages is None):
            raise ToolError("give exactly one of text or messages")
        said: Any = text if messages is None else [m.model_dump(exclude_none=True) for m in messages]
        kept = await call(core.write, memory.add, said, user_id=whose(user_id, ctx), timestamp=timestamp)
        return Items(items=[Item.of(r) for r in kept])

    async def search_memory(query: Annotated[Text, Field(description="What to look for, in plain words.")], *,
                            user_id: UserId, limit: Annotated[int | None, Field(
                                description=f"At most this many items (1-{MAX_LIMIT}; default: the program's top_k).",
                                ge=1, le=MAX_LIMIT)] = None, ctx: Context) -> Items:
        """Find a user's memories relevant to a query (what they said, did, prefer), best first with
        scores. Use it before answering anything about the user's past. Returns active items only
        (not superseded or deleted ones); an empty list when nothing is stored."""
        found = await call(core.read, memory.search, query, user_id=whose(user_id, ctx), limit=limit)
        return Items(items=[Item.of(r) for r in found])

    async def get_memory(item_id: ItemId, *, user_id: UserId, ctx: Context) -> Item:
        """One memory item by id, also a superseded or deleted one, with its full lineage (what
        was created, merged, updated or deleted, and when). Use it to check an item's history."""
        return Item.of(await call(core.read, memory.get, item_id, user_id=whose(user_id, ctx)))

    async def update_memory(item_id: ItemId, text: Annotated[Text, Field(description="The corrected text.")], *,
                            user_id: UserId, timestamp: Timestamp = None, ctx: Context) -> Updated:
        """Correct a wrong or outdated memory: the new text is written through the program and the
        old item is superseded (it leaves search; its text stays in get_memory's history). Returns
        the new items. Use it when the user corrects a fact; use add_memory for a new fact."""
        new = await call(core.write, memory.update, item_id, text, user_id=whose(user_id, ctx), timestamp=timestamp)
        return Updated(updated=item_id, items=[Item.of(r) for r in new])

    async def delete_memory(item_id: ItemId, *, user_id: UserId, ctx: Context) -> Deleted:
        """Delete one memory item (it leaves search; get_memory still shows it as deleted). Use it
        when the user asks you to forget something or an item is plainly wrong and has no
        replacement. Deleting it again changes nothing (deleted 0). Returns what was removed and
        the checks that it is gone (verified). Deleting all of a user's memories is not offered here."""
        report = await call(core.write, memory.delete_verified, user_id=whose(user_id, ctx), item_id=item_id)
        return Deleted.model_validate(report.to_dict())  # the HTTP API's answer (core.delete)

    tools = [(add_memory, "Save a memory", ToolAnnotations(read_only_hint=False, destructive_hint=False)),
             (search_memory, "Search memories", ToolAnnotations(read_only_hint=True)),
             (get_memory, "Get one memory", ToolAnnotations(read_only_hint=True)),
             (update_memory, "Correct a memory", ToolAnnotations(read_only_hint=False, destructive_hint=False)),
             (delete_memory, "Delete a memory", ToolAnnotations(read_only_hint=False, destructive_hint=True,
                                                                idempotent_hint=True))]
    for fn, _, _ in tools:
        if user_id is not None:  # pinned: user_id becomes optional, defaulting to the pinned user
            fn.__kwdefaults__ = {**(fn.__kwdefaults__ or {}), "user_id": user_id}
    return _MemoryMCP(name, instructions=instructions, log_level="WARNING", tools=[
        _strict(Tool.from_function(fn, title=title, annotations=annotations, description=" ".join(fn.__doc__.split())))
        for fn, title, annotations in tools])


class _MemoryMCP(MCPServer):
    """`MCPServer` whose stdio transport answers a line that is not JSON-RPC (-32700 parse error,
    -32600 invalid request, logged) instead of dropping it, and stops cleanly on SIGTERM / SIGINT."""

    async def run_stdio_async(self) -> None:
        problems_in, problems_out = anyio.create_memory_object_stream[SessionMessage](64)
        lines = _CheckedLines(problems_in)
        async with stdio_server(stdin=lines) as (read_stream, write_stream):
            async with anyio.create_task_group() as tg:
                tg.start_soon(_forward, problems_out, write_stream)
                await self._lowlevel_server.run(read_stream, write_stream,
                                                self._lowlevel_server.create_initialization_options())
                tg.cancel_scope.cancel()

    async def run_stdio_until_signal(self) -> None:
        """`run_stdio_async` until stdin closes or a SIGTERM / SIGINT arrives (then a clean return)."""
        async with anyio.create_task_group() as tg:
            async def stop_on_signal() -> None:
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    async for sig in signals:
                        log.info("MCP stdio: %s, stopping", signal.Signals(sig).name)
                        tg.cancel_scope.cancel()
                        return
            tg.start_soon(stop_on_signal)
            await self.run_stdio_async()
            tg.cancel_scope.cancel()


class _CheckedLines:
    """stdin's lines for the SDK's stdio transport, the JSON-RPC ones only: a line that is not JSON
    is answered with a -32700 parse error, JSON that is not a JSON-RPC message with -32600 (its id
    when it has one), each logged with its line number; blank lines are skipped. stdin is read by a
    daemon thread, so a signal that stops the server is not held up by a read that never returns."""

    def __init__(self, problems: Any):
        self.problems = problems
        self.queue: asyncio.Queue | None = None
        self.n = 0

    def _start(self) -> None:
        loop, self.queue = asyncio.get_running_loop(), asyncio.Queue()
        stdin = io.TextIOWrapper(os.fdopen(os.dup(0), "rb"), encoding="utf-8", errors="replace")

        def read() -> None:
            try:
                for line in stdin:
                    loop.call_soon_threadsafe(self.queue.put_nowait, line)
            except (OSError, ValueError):
                pass
            finally:
                try:
                    loop.call_soon_threadsafe(self.queue.put_nowait, None)
                except RuntimeError:  # the loop is closed: the server stopped first
                    pass
        threading.Thread(target=read, name="mcp-stdin", daemon=True).start()

    def __aiter__(self) -> "_CheckedLines":
        return self

    async def __anext__(self) -> str:
        if self.queue is None:
            self._start()
        while True:
            line = await self.queue.get()
            if line is None:
                raise StopAsyncIteration
            self.n += 1
            if not line.strip():
                continue
            problem = _problem(line)
            if problem is None:
                return line
            code, message, rid = problem
            log.warning("MCP stdio: line %d refused (%s): %s", self.n, message, clip(line.strip()))
            await self.problems.send(SessionMessage(types.JSONRPCError(
                jsonrpc="2.0", id=rid, error=types.ErrorData(code=code, message=message))))


def _problem(line: str) -> tuple[int, str, Any] | None:
    """None for a JSON-RPC message; else (code, message, the id to answer with)."""
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except Exception:  # noqa: BLE001 - the SDK's own check: any failure is a refusal
        pass
    try:
        value = json.loads(line)
    except ValueError as exc:
        return types.PARSE_ERROR, f"Parse error: not JSON ({exc.msg} at character {exc.pos})", None
    rid = value.get("id") if isinstance(value, dict) else None
    rid = rid if isinstance(rid, (str, int)) and not isinstance(rid, bool) else None
    return types.INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message", rid


async def _forward(problems: Any, write_stream: Any) -> None:
    async with problems:
        async for message in problems:
            await write_stream.send(message)


def _strict(tool: Tool) -> Tool:
    """The SDK ignores arguments a tool does not take, and coerces types (``"limit": "3"`` is 3); a
    misspelt ``limt`` and a string for a number should be errors, as they are over HTTP (schemas.py)."""
    base = tool.fn_metadata.arg_model
    tool.fn_metadata.arg_model = type(base.__name__, (base,), {
        "model_config": ConfigDict(**{**base.model_config, "extra": "forbid", "strict": True}),
        "__module__": base.__module__})
    tool.parameters["additionalProperties"] = False
    return tool


def run_mcp(memory: Memory, transport: Literal["stdio", "http"] | str, host: str = "127.0.0.1", port: int = 8766,
            *, user_id: str | None = None, auth: TokenAuth | None = None, token: str | None = None,
            path: str = "/mcp", header_timeout_s: float | None = None, max_connections: int | None = None,
            max_connections_per_client: int | None = None) -> None:
    """Serve ``memory`` over MCP until interrupted: ``stdio`` (the agent spawns this process) or
    ``http`` (streamable HTTP at ``http://host:port/mcp``). ``user_id`` pins the server to one user.
    Over http, ``auth`` (`TokenAuth`, the token file of ``memarch serve``) makes a bearer token
    required on every request (401 otherwise) and limits each call to the users its token may act
    for; ``token`` is one secret for every user. A non-loopback ``host`` without either is refused."""
    if token is not None:
        if auth is not None:
            raise MemarchError("give auth or token, not both")
        auth = TokenAuth.from_secrets({token: None})
    if transport not in ("stdio", "http"):
        raise MemarchError(f"--mcp: expected stdio or http, got {transport!r}")
    if transport == "stdio":
        anyio.run(build_mcp(memory, user_id=user_id).run_stdio_until_signal)
        return
    if auth is None and not _loopback(host):
        raise MemarchError(f"MCP over http on {host} (not loopback) needs bearer tokens (--token-file); "
                           "or bind 127.0.0.1")
    from memarch.app.serve.server import serve_app

    app = mcp_http_app(build_mcp(memory, user_id=user_id, auth=auth), path=path, host=host, auth=auth)
    log.info("MCP (streamable http) at http://%s:%d%s", host, port, path)
    limits = {k: v for k, v in (("header_timeout_s", header_timeout_s), ("max_connections", max_connections),
                                ("max_connections_per_client", max_connections_per_client)) if v is not None}
    serve_app(app, host=host, port=port, log_level="warning", **limits)


def mcp_http_app(server: MCPServer, *, path: str = "/mcp", host: str = "127.0.0.1",
                 auth: TokenAuth | None = None) -> Any:
    """The ASGI app of ``server`` over streamable HTTP at ``path``: the SDK's, behind `BearerAuth`
    when ``auth`` is given, and without Starlette's redirect of ``/mcp/`` to ``/mcp``, whose
    Location names the host of the request's ``Host`` header (any host a client chooses)."""
    app: Any = server.streamable_http_app(streamable_http_path=path, host=host)
    app.router.redirect_slashes = False
    return BearerAuth(app, auth) if auth is not None else app


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class BearerAuth:
    """ASGI middleware: an HTTP request without a token `auth` knows gets a 401 (the API's error
    shape) and reaches nothing (which users the token may act for is checked per tool call); the
    app's lifespan passes."""

    def __init__(self, app: Any, auth: TokenAuth):
        self.app, self.auth = app, auth

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            header = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
            if self.auth.authenticate(header) is None:
                return await send_refusal(send, Refusal(401, "missing or wrong bearer token",
                                                        [(b"www-authenticate", b"Bearer")]))
        await self.app(scope, receive, send)

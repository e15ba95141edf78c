"""Every refusal the servers send, in one shape: ``{"error": "one line"}`` (compact UTF-8 JSON, as
Starlette's JSONResponse writes it), written by `error_body` alone — for the guard, the hot routes,
FastAPI's handlers, the protocol's own refusals (server.py) and MCP's bearer check.

`refusal_of` is the one mapping from an exception to its answer: a `Refusal` as it is, a
`NotFoundError` 404, any other `MemarchError` 400 (input the memory refused), a deletion that left
something behind (`DeletionUnverified`) 500 with what it found, anything else 500 (logged; one line
to the client). The server's directory never reaches a client: ``hide`` is
replaced by "the memory" in every message."""
from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable, Iterable

import orjson

from memarch.app.deletion import DeletionUnverified
from memarch.errors import MemarchError, NotFoundError

log = logging.getLogger(__name__)

Send = Callable[[dict], Awaitable[None]]
Headers = Iterable[tuple[bytes, bytes]]


class Refusal(Exception):
    """A request refused: its status, its one-line message, any extra headers (ASGI pairs)."""

    def __init__(self, status: int, message: Any, headers: Headers = ()):
        super().__init__(one_line(message))
        self.status, self.message, self.headers = status, one_line(message), tuple(headers)


def one_line(message: Any) -> str:
    return " ".join(str(message).split()) or "error"


def error_body(message: Any) -> bytes:
    """The bytes of every error response: ``{"error": "..."}`` on one line."""
    return orjson.dumps({"error": one_line(message)})


def refusal_of(exc: BaseException, hide: str, where: str = "request") -> Refusal:
    """The answer to ``exc`` (module docstring); a bug is logged with ``where`` and its traceback."""
    if isinstance(exc, Refusal):
        return exc
    if isinstance(exc, MemarchError):
        return Refusal(404 if isinstance(exc, NotFoundError) else 400, str(exc).replace(hide, "the memory"))
    if isinstance(exc, DeletionUnverified):  # a bug, but one the client must hear about in words
        message = str(exc).replace(hide, "the memory")
        log.error("%s failed: %s", where, message)
        return Refusal(500, message)
    log.error("%s failed", where, exc_info=exc)
    return Refusal(500, f"internal error ({type(exc).__name__}); the server log has the details")


async def send_json(send: Send, status: int, body: bytes, headers: Headers = ()) -> None:
    """A JSON response on an ASGI ``send`` (``body``: `error_body` or orjson's bytes)."""
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-length", str(len(body)).encode()), (b"content-type", b"application/json"),
                            *headers]})
    await send({"type": "http.response.body", "body": body})


async def send_refusal(send: Send, refusal: Refusal) -> None:
    await send_json(send, refusal.status, error_body(refusal.message), refusal.headers)


def validation_line(errors: list[dict]) -> str:
    """A list of validation errors (FastAPI's shape) as one line: the first one, where and what."""
    if not errors:
        return "invalid request"
    e = errors[0]
    loc = list(e.get("loc", ()))
    where = loc.pop(0) if loc else "body"
    if e.get("type") == "json_invalid":
        why = (e.get("ctx") or {}).get("error", "")
        at = f" at byte {loc[0]}" if loc and isinstance(loc[0], int) else ""
        return f"invalid JSON{at}: {why}".rstrip(": ")
    if where == "body" and not loc and e.get("type") == "missing":
        return "a JSON body is required (Content-Type: application/json)"
    if where == "body" and not loc and e.get("type") in ("model_attributes_type", "dict_type", "model_type"):
        return "body: expected a JSON object (Content-Type: application/json)"
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
    subject = {"body": path or "body", "query": f"query parameter {path!r}",
               "path": f"path parameter {path!r}"}.get(where, path or str(where))
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{subject}: {e.get('msg', 'invalid')}{more}"

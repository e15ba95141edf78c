"""The two requests an agent makes most, ``POST /v1/users/{user_id}/search`` and ``.../memories``
(add), answered without FastAPI's routing, dependency solving and response classes: the same
checks and answers as the routes of `http_api` (the same body models, the same one-line errors, the
same JSON), at a fraction of their per-request CPU. `guard.Guard` hands them over once the request
is authenticated, authorised for its user and its body read; every other request goes to FastAPI.
tests/app/serve/test_hot_routes.py sends the same requests, valid and malformed, both ways and
compares the answers byte for byte."""
from __future__ import annotations

import functools
import json
import logging
import re
from typing import Any, Awaitable, Callable

import anyio
import orjson
from pydantic import ValidationError

from memarch.app.messages import as_user
from memarch.app.serve import schemas as s
from memarch.errors import MemarchError, NotFoundError

log = logging.getLogger(__name__)

_ROUTE = re.compile(r"^/v1/users/([^/]+)/(search|memories)$")
Send = Callable[[dict], Awaitable[None]]


class HotRoutes:
    """``match(scope)`` -> a handler for a search or an add of ``memory``, or None.

    Args:
        memory: the `memarch.Memory` served.
        hide: the server's path, replaced in error messages (as the API's handlers do).
        validation_line: the API's one-line form of a list of validation errors.
    """

    def __init__(self, memory: Any, hide: str, validation_line: Callable[[list[dict]], str]):
        self.memory, self.hide, self.validation_line = memory, hide, validation_line

    def match(self, scope: dict) -> Callable[..., Awaitable[None]] | None:
        if scope["method"] != "POST":
            return None
        m = _ROUTE.match(scope["path"])
        if m is None:
            return None
        return functools.partial(self._search if m.group(2) == "search" else self._add, m.group(1))

    async def _search(self, user_id: str, scope: dict, headers: dict[str, str], body: bytes, send: Send) -> None:
        request = await self._request(s.SearchRequest, user_id, scope, headers, body, send)
        if request is None:
            return
        records = await self._call(send, self.memory.search, request.query, user_id=user_id, limit=request.limit)
        if records is not None:
            await respond(send, 200, {"results": [r.to_dict() for r in records]})

    async def _add(self, user_id: str, scope: dict, headers: dict[str, str], body: bytes, send: Send) -> None:
        request = await self._request(s.AddRequest, user_id, scope, headers, body, send)
        if request is None:
            return
        records = await self._call(send, self.memory.add, plain(request.messages), user_id=user_id,
                                   timestamp=request.timestamp, _write=True)
        if records is not None:
            await respond(send, 201, {"items": [r.to_dict() for r in records]})

    async def _request(self, model: Any, user_id: str, scope: dict, headers: dict[str, str], body: bytes,
                       send: Send) -> Any | None:
        """The validated body, or None once the refusal is sent: the user id's rule (400), an
        unknown query parameter or a malformed body (422), as the API's dependencies and FastAPI's
        body parsing refuse them, in that order."""
        try:
            as_user(user_id)
        except MemarchError as exc:
            await respond(send, 400, {"error": one_line(exc)})
            return None
        if scope.get("query_string"):
            name = next((k for k, _ in _query_names(scope["query_string"])), None)
            if name is not None:
                errors = [{"loc": ("query", name), "msg": "unknown query parameter", "type": "extra_forbidden"}]
                await respond(send, 422, {"error": self.validation_line(errors)})
                return None
        kind = headers.get("content-type", "").split(";")[0].strip().lower()
        json_like = kind == "application/json" or (kind.startswith("application/") and kind.endswith("+json"))
        if not body:
            errors = [{"loc": ("body",), "type": "missing", "msg": "Field required"}]
        elif not json_like:
            errors = [{"loc": ("body",), "type": "model_attributes_type", "msg": "Input should be a valid dictionary"}]
        else:  # as FastAPI reads a JSON body: json.loads, then the model on the Python value
            try:
                value = json.loads(body)
            except json.JSONDecodeError as exc:
                errors = [{"loc": ("body", exc.pos), "type": "json_invalid", "msg": "JSON decode error",
                           "ctx": {"error": exc.msg}}]
            except Exception:  # noqa: BLE001 - FastAPI's answer to a body it cannot decode at all
                await respond(send, 400, {"error": "There was an error parsing the body"})
                return None
            else:
                try:
                    return model.model_validate(value)
                except ValidationError as exc:
                    errors = [{**e, "loc": ("body", *e["loc"])} for e in exc.errors()]
        await respond(send, 422, {"error": self.validation_line(errors)})
        return None

    async def _call(self, send: Send, fn: Callable[..., Any], *args: Any, _write: bool = False, **kwargs: Any) -> Any | None:
        """``fn`` on a worker thread (`on_memory_thread`); a MemarchError is the API's 400 / 404 (None)."""
        try:
            return await on_memory_thread(_write, fn, *args, **kwargs)
        except MemarchError as exc:
            await respond(send, 404 if isinstance(exc, NotFoundError) else 400,
                          {"error": one_line(str(exc).replace(self.hide, "the memory"))})
        except Exception as exc:  # noqa: BLE001 - the API's 500: logged, one line to the client
            log.exception("POST %s failed", getattr(fn, "__name__", "call"))
            await respond(send, 500, {"error": f"internal error ({type(exc).__name__}); the server log has the details"})
        return None


READ_THREADS, WRITE_THREADS = 2, 1  # `Memory` calls at once; the others wait in the event loop


_LIMITERS: dict[tuple[int, bool], Any] = {}


def memory_threads(write: bool = False) -> Any:
    """The worker threads `Memory` calls run on: at most `READ_THREADS` reads and `WRITE_THREADS`
    writes at once (limiters per event loop). Its Python runs one thread at a time anyway (the GIL):
    two readers let a search go on beside a write waiting on the database or the model, a write
    never holds a reader's thread while it waits for another write, and 16 clients do not make 16
    threads take turns with the interpreter (measured at 100k items: 6.0 ms of server CPU per
    request with anyio's 40 threads, ~3.5 ms with two)."""
    import asyncio

    key = (id(asyncio.get_running_loop()), write)
    limiter = _LIMITERS.get(key)
    if limiter is None:
        limiter = _LIMITERS[key] = anyio.CapacityLimiter(WRITE_THREADS if write else READ_THREADS)
    return limiter


async def on_memory_thread(write: bool, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, a `Memory` call, on one of `memory_threads` (the writers' when
    ``write``): the event loop keeps accepting and parsing requests meanwhile."""
    return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs), limiter=memory_threads(write=write))


def _query_names(raw: bytes) -> list[tuple[str, str]]:
    from urllib.parse import parse_qsl

    return parse_qsl(raw.decode("latin-1"), keep_blank_values=True)


def plain(messages: Any) -> Any:
    """Validated messages back to what `Memory.add` takes (dicts, strings)."""
    if isinstance(messages, list):
        return [plain(m) for m in messages]
    return messages.model_dump(exclude_none=True) if isinstance(messages, s.Message) else messages


def one_line(message: Any) -> str:
    return " ".join(str(message).split()) or "error"


async def respond(send: Send, status: int, content: Any) -> None:
    """A JSON response (compact, UTF-8, as Starlette's JSONResponse writes it)."""
    body = orjson.dumps(content)
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-length", str(len(body)).encode()), (b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})

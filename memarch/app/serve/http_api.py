"""The HTTP API over one `memarch.Memory` (FastAPI): ``create_app(memory)`` returns the ASGI app
that ``memarch serve`` runs with uvicorn.

Routes are versioned under ``/v1`` and name the user in the path (``/v1/users/{user_id}/...``), so
that a token scoped to some users is checked against the path before the body is read (`guard`);
``/v1/bulk`` carries users in its body and checks each before it writes. Endpoints are ``async``;
each runs its one `Memory` call on anyio's worker threads (`run`), so a long call (a bulk import, a
user's deletion) leaves the event loop free for other requests, ``/health`` and refusals, and
`Memory` serialises the calls under its lock (reads and writes alike; one process holds the whole
memory). With the sync `Memory` rather than `memarch.AsyncMemory`: the server needs nothing more
than one thread hop per request. Every error is a small JSON body
``{"error": "one line"}``: 400 input the memory refused, 401/403 auth, 404 no such item or route,
413 body too large, 422 malformed request (bad JSON, unknown field, wrong type), 500 a bug."""
from __future__ import annotations

import functools
import logging
from typing import Any

import orjson

from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPBearer
from starlette.exceptions import HTTPException

from memarch._version import __version__
from memarch.app.messages import as_messages, as_user
from memarch.app.serve import schemas as s
from memarch.app.serve.auth import TokenAuth
from memarch.app.serve.hot_routes import HotRoutes, on_memory_thread, one_line, plain
from memarch.app.serve.guard import BODY_TIMEOUT_S, TOKEN_KEY, Guard, refused_users, scope_refusal
from memarch.errors import MemarchError, NotFoundError

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 1 << 20
_ERRORS = {code: {"model": s.Error} for code in (400, 401, 403, 404, 413, 422)}


def create_app(memory: Any, *, auth: TokenAuth | None = None, max_body_bytes: int = MAX_BODY_BYTES,
               body_timeout_s: float = BODY_TIMEOUT_S, hot: bool = True) -> Guard:
    """The ASGI app serving ``memory`` (a `memarch.Memory`): FastAPI behind `Guard`. ``auth``: the accepted tokens (None:
    no authentication, for loopback only); ``max_body_bytes``: the largest request body (413 past it);
    ``body_timeout_s``: the time a request has to send it after its headers (408 past it); ``hot``:
    answer searches and adds past FastAPI's routing (`hot_routes`, the same answers; False: every
    request through FastAPI)."""
    app = FastAPI(title="memarch", version=__version__, docs_url="/docs", openapi_url="/openapi.json",
                  description="The long-term memory of a compiled memarch program, per user: add "
                              "messages, search, context, get, history, update, delete. Errors are "
                              '`{"error": "..."}`.')
    app.state.memory = memory
    app.include_router(_health(memory))
    app.include_router(_v1(memory), prefix="/v1")
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(HTTPException, _http_error)
    hide = str(memory.path)  # the server's directory is none of the client's business

    async def refused(_request: Request, exc: Exception) -> JSONResponse:
        return _error(404 if isinstance(exc, NotFoundError) else 400, str(exc).replace(hide, "the memory"))
    app.add_exception_handler(MemarchError, refused)  # NotFoundError is one
    app.add_exception_handler(Exception, _bug)
    # The guard wraps the whole app (outside FastAPI's own middleware): a refusal, a search and an
    # add are answered before any of its layers run; ``guard.app`` is the FastAPI app.
    return Guard(app, auth=auth, max_body_bytes=max_body_bytes, body_timeout_s=body_timeout_s,
                 hot=HotRoutes(memory, hide, validation_line) if hot else None)


def _health(memory: Any) -> APIRouter:
    router = APIRouter()
    key = memory.program.architecture.key()

    @router.get("/health", response_model=s.Health, summary="liveness (no token needed)")
    async def health() -> JSONResponse:
        return _json({"status": "ok", "program": key, "version": __version__})
    return router


async def _authorize(request: Request, user_id: str) -> None:
    """Per route, before the body is read: the path's user id against the one user-id rule (400),
    then against the token (403; the guard did it on the raw path)."""
    as_user(user_id)
    refusal = scope_refusal(request.scope.get(TOKEN_KEY), f"/v1/users/{user_id}/")
    if refusal:
        raise HTTPException(403, refusal)


async def _known_query(request: Request) -> None:
    """An unknown query parameter (``?includ_deleted=1``) is a 422, not silently ignored."""
    route = request.scope.get("route")
    known = {p.alias for p in route.dependant.query_params} if route is not None else set()
    unknown = sorted(set(request.query_params) - known)
    if unknown:
        raise RequestValidationError([{"loc": ("query", unknown[0]), "msg": "unknown query parameter",
                                       "type": "extra_forbidden"}])


def _v1(memory: Any) -> APIRouter:
    bearer = HTTPBearer(auto_error=False, description="a token of the server's --token-file")
    router = APIRouter(dependencies=[Depends(bearer), Depends(_known_query)], responses=_ERRORS)
    user = APIRouter(prefix="/users/{user_id}", dependencies=[Depends(_authorize)], tags=["memories"])

    @user.post("/memories", status_code=201, response_model=s.Items, summary="add messages (one session)")
    async def add(user_id: str, body: s.AddRequest) -> JSONResponse:
        records = await run_write(memory.add, plain(body.messages), user_id=user_id, timestamp=body.timestamp)
        return _json({"items": [_record(r) for r in records]}, 201)

    @user.get("/memories", response_model=s.Page, summary="list the user's items, oldest first")
    async def list_items(user_id: str, include_deleted: bool = False, offset: int = Query(0, ge=0),
                         limit: int = Query(100, ge=1, le=s.MAX_PAGE)) -> JSONResponse:
        records = await run(memory.get_all, user_id=user_id, include_deleted=include_deleted)
        return _json({"items": [_record(r) for r in records[offset:offset + limit]], "total": len(records),
                      "offset": offset, "limit": limit})

    @user.post("/search", response_model=s.SearchResult, summary="search the user's memory, best first")
    async def search(user_id: str, body: s.SearchRequest) -> JSONResponse:
        records = await run(memory.search, body.query, user_id=user_id, limit=body.limit)
        return _json({"results": [_record(r) for r in records]})

    @user.post("/context", response_model=s.ContextResult, summary="the context the program would give a model")
    async def context(user_id: str, body: s.SearchRequest) -> JSONResponse:
        return _json({"context": await run(memory.context, body.query, user_id=user_id, limit=body.limit)})

    @user.get("/memories/{item_id}", response_model=s.Record, summary="one item (also superseded or deleted)")
    async def get(user_id: str, item_id: str) -> JSONResponse:
        return _json(_record(await run(memory.get, item_id, user_id=user_id)))

    @user.get("/memories/{item_id}/history", response_model=s.History, summary="the item's lineage, oldest first")
    async def history(user_id: str, item_id: str) -> JSONResponse:
        return _json({"item_id": item_id, "history": await run(memory.history, item_id, user_id=user_id)})

    @user.get("/memories/{item_id}/source", response_model=s.Source,
              summary="the messages the item was written from")
    async def source(user_id: str, item_id: str) -> JSONResponse:
        return _json({"item_id": item_id, "messages": await run(memory.source, item_id, user_id=user_id)})

    @user.put("/memories/{item_id}", response_model=s.Items,
              summary="correct an item: re-encoded, the old one superseded (lineage kept)")
    async def update(user_id: str, item_id: str, body: s.UpdateRequest) -> JSONResponse:
        records = await run_write(memory.update, item_id, body.text, user_id=user_id, timestamp=body.timestamp)
        return _json({"items": [_record(r) for r in records]})

    user.patch("/memories/{item_id}", response_model=s.Items, summary="the same as PUT")(update)

    @user.delete("/memories/{item_id}", response_model=s.Deleted, summary="tombstone one item")
    async def delete_item(user_id: str, item_id: str) -> JSONResponse:
        return _json({"deleted": await run_write(memory.delete, user_id=user_id, item_id=item_id)})

    @user.delete("", response_model=s.Deleted, summary="delete every item and message of the user, from disk")
    async def delete_user(user_id: str) -> JSONResponse:
        return _json({"deleted": await run_write(memory.delete, user_id=user_id)})

    @router.post("/bulk", status_code=201, response_model=s.BulkResult, tags=["memories"],
                 summary="add many sessions, of one or several users, in one call")
    async def bulk(request: Request, body: s.BulkRequest) -> JSONResponse:
        refused = refused_users(request.scope.get(TOKEN_KEY), [x.user_id for x in body.sessions])
        if refused:
            raise HTTPException(403, f"this token may not act for user {refused[0]!r}")
        sessions = [{"messages": plain(x.messages), "user_id": x.user_id, "timestamp": x.timestamp}
                    for x in body.sessions]
        for i, x in enumerate(sessions):  # all checked (and by the schema) before the first is written
            try:
                as_messages(x["messages"])
            except MemarchError as exc:
                raise MemarchError(f"sessions[{i}]: {exc}") from None
        results = await run_write(memory.add_many, sessions)
        return _json({"sessions": len(results), "items": [[_record(r) for r in kept] for kept in results]}, 201)

    @router.get("/stats", tags=["server"], summary="the memory's size: users, items by status, episodes")
    async def stats() -> JSONResponse:
        return _json(await run(memory.stats))

    router.include_router(user)
    return router


# One `Memory` call on a worker thread: a read on a reader's (`Memory`'s locks keep a user's reads from
# its writes), a write on the writers' own (writes go one at a time anyway, and waiting ones never take
# the threads the searches run on).
run = functools.partial(on_memory_thread, False)
run_write = functools.partial(on_memory_thread, True)


def _record(record: Any) -> dict:
    """A `MemoryRecord` as JSON (its ``to_dict``: plain values, fresh copies)."""
    return record.to_dict()


class _Json(JSONResponse):
    """Compact UTF-8 JSON by orjson: the bytes Starlette's JSONResponse writes, several times faster."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def _json(content: Any, status: int = 200) -> JSONResponse:
    """The response as is: the records are plain JSON already, so the route's ``response_model``
    documents them without validating them a second time."""
    return _Json(content, status_code=status)


def _error(status: int, message: Any, headers: dict | None = None) -> JSONResponse:
    return _Json({"error": one_line(message)}, status_code=status, headers=headers)


async def _http_error(_request: Request, exc: HTTPException) -> JSONResponse:
    return _error(exc.status_code, exc.detail, getattr(exc, "headers", None))


async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
    return _error(422, validation_line(exc.errors()))


async def _bug(request: Request, exc: Exception) -> JSONResponse:
    log.exception("%s %s failed", request.method, request.url.path)
    return _error(500, f"internal error ({type(exc).__name__}); the server log has the details")


def validation_line(errors: list[dict]) -> str:
    """FastAPI's list of validation errors as one line: the first one, where and what."""
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

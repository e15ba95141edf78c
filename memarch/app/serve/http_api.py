"""The HTTP API over one `memarch.Memory` (FastAPI): ``create_app(memory)`` returns the ASGI app
that ``memarch serve`` runs with uvicorn.

Routes are versioned under ``/v1`` and name the user in the path (``/v1/users/{user_id}/...``), so
that a token scoped to some users is checked against the path before the body is read (`guard`);
``/v1/bulk`` carries users in its body and checks each before it writes. This module is FastAPI's
adapter over the serving core: the routes, their documented schemas and FastAPI's body parsing;
each endpoint is one `ServingCore` call (core.py: the `Memory` call on the reader or writer
threads, so a long call — a bulk import, a user's deletion — leaves the event loop free for other
requests, ``/health`` and refusals). JSON bodies are read as UTF-8 only (`checks.loads_json`, the
routes' `_Utf8Route`). Every error is a small JSON body ``{"error": "one line"}`` (errors.py): 400
input the memory refused, 401/403 auth, 404 no such item or route, 413 body too large, 422
malformed request (bad JSON, unknown field, wrong type), 500 a bug (a deletion that left
something behind included)."""
from __future__ import annotations

from typing import Any, Callable, Coroutine

import orjson

from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from fastapi.security import HTTPBearer
from starlette.exceptions import HTTPException

from memarch._version import __version__
from memarch.app.deletion import DeletionUnverified
from memarch.app.serve import schemas as s
from memarch.app.serve.auth import TokenAuth
from memarch.app.serve.checks import check_query, check_user, loads_json
from memarch.app.serve.core import ServingCore
from memarch.app.serve.errors import Refusal, error_body, validation_line
from memarch.app.serve.guard import BODY_TIMEOUT_S, TOKEN_KEY, Guard
from memarch.app.serve.hot_routes import HotRoutes
from memarch.errors import MemarchError

MAX_BODY_BYTES = 1 << 20
_ERRORS = {code: {"model": s.Error} for code in (400, 401, 403, 404, 413, 422)}


def create_app(memory: Any, *, auth: TokenAuth | None = None, max_body_bytes: int = MAX_BODY_BYTES,
               body_timeout_s: float = BODY_TIMEOUT_S, hot: bool = True) -> Guard:
    """The ASGI app serving ``memory`` (a `memarch.Memory`): FastAPI behind `Guard`. ``auth``: the accepted tokens (None:
    no authentication, for loopback only); ``max_body_bytes``: the largest request body (413 past it);
    ``body_timeout_s``: the time a request has to send it after its headers (408 past it); ``hot``:
    answer searches and adds past FastAPI's routing (`hot_routes`, the same answers; False: every
    request through FastAPI). The app owns its `ServingCore` (and so its `Memory` threads)."""
    core = ServingCore(memory)
    # No redirect of ``/memories/`` to ``/memories``: Starlette builds its Location from the Host
    # header, which the client chose (a redirect to any host); a path the API lacks is a 404.
    app = FastAPI(title="memarch", version=__version__, docs_url="/docs", openapi_url="/openapi.json",
                  redirect_slashes=False,
                  description="The long-term memory of a compiled memarch program, per user: add "
                              "messages, search, context, get, history, update, delete. Errors are "
                              '`{"error": "..."}`.')
    app.state.core = core
    app.include_router(_health(memory))
    app.include_router(_v1(), prefix="/v1")

    async def refused(request: Request, exc: Exception) -> Response:
        refusal = core.refusal(exc, f"{request.method} {request.url.path}")
        return _error(refusal.status, refusal.message, dict((k.decode(), v.decode()) for k, v in refusal.headers))
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(HTTPException, _http_error)
    # A MemarchError is a 400 / 404, anything else a 500; a deletion that left something behind is a
    # 500 answered by its own handler, so its one log line is not followed by Starlette's re-raise.
    for kind in (Refusal, MemarchError, DeletionUnverified, Exception):
        app.add_exception_handler(kind, refused)
    # The guard wraps the whole app (outside FastAPI's own middleware): a refusal, a search and an
    # add are answered before any of its layers run; ``guard.app`` is the FastAPI app.
    return Guard(app, auth=auth, max_body_bytes=max_body_bytes, body_timeout_s=body_timeout_s,
                 hot=HotRoutes(core, TOKEN_KEY) if hot else None)


def _health(memory: Any) -> APIRouter:
    router = APIRouter()
    key = memory.program.architecture.key()

    @router.get("/health", response_model=s.Health, summary="liveness (no token needed)")
    async def health() -> JSONResponse:
        return _json({"status": "ok", "program": key, "version": __version__})
    return router


async def _known_query(request: Request) -> None:
    """An unknown query parameter (``?includ_deleted=1``) is a 422, not silently ignored."""
    route = request.scope.get("route")
    check_query(request.query_params, {p.alias for p in route.dependant.query_params} if route is not None else ())


async def _authorize(request: Request, user_id: str) -> None:
    """Per route, before the body is checked: the path's user id against the rule and the token
    (the guard checked the token on the raw path already)."""
    check_user(user_id, request.scope.get(TOKEN_KEY))


def _core(request: Request) -> ServingCore:
    """The app's core, from the request: the endpoints hold no reference to it (FastAPI memoises
    endpoints process-wide, which would keep every app's core and its threads alive)."""
    return request.app.state.core


class _Utf8Request(Request):
    """A request whose JSON body is read as the hot routes read it (`checks.loads_json`): UTF-8 only,
    where Starlette's ``json.loads(bytes)`` takes UTF-16 and UTF-32 too, and answers bytes it cannot
    decode with FastAPI's 400."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = loads_json(await self.body())
        return self._json


class _Utf8Route(APIRoute):
    """FastAPI's route, handed a `_Utf8Request` (FastAPI's documented way to change how a body is read)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def utf8_handler(request: Request) -> Response:
            return await handler(_Utf8Request(request.scope, request.receive))
        return utf8_handler


def _v1() -> APIRouter:
    bearer = HTTPBearer(auto_error=False, description="a token of the server's --token-file")
    router = APIRouter(dependencies=[Depends(bearer), Depends(_known_query)], responses=_ERRORS,
                       route_class=_Utf8Route)
    user = APIRouter(prefix="/users/{user_id}", dependencies=[Depends(_authorize)], tags=["memories"],
                     route_class=_Utf8Route)

    @user.post("/memories", status_code=201, response_model=s.Items, summary="add messages (one session)")
    async def add(request: Request, user_id: str, body: s.AddRequest) -> JSONResponse:
        return _json(await _core(request).add(user_id, body), 201)

    @user.get("/memories", response_model=s.Page, summary="list the user's items, oldest first")
    async def list_items(request: Request, user_id: str, include_deleted: bool = False,
                         offset: int = Query(0, ge=0, le=s.MAX_OFFSET),
                         limit: int = Query(100, ge=1, le=s.MAX_PAGE)) -> JSONResponse:
        return _json(await _core(request).page(user_id, include_deleted, offset, limit))

    @user.post("/search", response_model=s.SearchResult, summary="search the user's memory, best first")
    async def search(request: Request, user_id: str, body: s.SearchRequest) -> JSONResponse:
        return _json(await _core(request).search(user_id, body))

    @user.post("/context", response_model=s.ContextResult, summary="the context the program would give a model")
    async def context(request: Request, user_id: str, body: s.SearchRequest) -> JSONResponse:
        return _json(await _core(request).context(user_id, body))

    @user.get("/memories/{item_id}", response_model=s.Record, summary="one item (also superseded or deleted)")
    async def get(request: Request, user_id: str, item_id: str) -> JSONResponse:
        return _json(await _core(request).get(user_id, item_id))

    @user.get("/memories/{item_id}/history", response_model=s.History, summary="the item's lineage, oldest first")
    async def history(request: Request, user_id: str, item_id: str) -> JSONResponse:
        return _json(await _core(request).history(user_id, item_id))

    @user.get("/memories/{item_id}/source", response_model=s.Source,
              summary="the messages the item was written from")
    async def source(request: Request, user_id: str, item_id: str) -> JSONResponse:
        return _json(await _core(request).source(user_id, item_id))

    @user.put("/memories/{item_id}", response_model=s.Items,
              summary="correct an item: re-encoded, the old one superseded (lineage kept)")
    async def update(request: Request, user_id: str, item_id: str, body: s.UpdateRequest) -> JSONResponse:
        return _json(await _core(request).update(user_id, item_id, body))

    user.patch("/memories/{item_id}", response_model=s.Items, summary="the same as PUT")(update)

    @user.delete("/memories/{item_id}", response_model=s.Deleted,
                 summary="tombstone one item; what was removed, checked gone")
    async def delete_item(request: Request, user_id: str, item_id: str) -> JSONResponse:
        return _json(await _core(request).delete(user_id, item_id))

    @user.delete("", response_model=s.Deleted,
                 summary="delete every item and message of the user, from disk; what was removed, checked gone")
    async def delete_user(request: Request, user_id: str) -> JSONResponse:
        return _json(await _core(request).delete(user_id))

    @user.get("/remains", response_model=s.Remains,
              summary="whether this server process holds anything of the user (after a deletion: nothing)")
    async def remains(request: Request, user_id: str) -> JSONResponse:
        return _json(await _core(request).remains(user_id))

    @router.post("/bulk", status_code=201, response_model=s.BulkResult, tags=["memories"],
                 summary="add many sessions, of one or several users, in one call")
    async def bulk(request: Request, body: s.BulkRequest) -> JSONResponse:
        return _json(await _core(request).bulk(request.scope.get(TOKEN_KEY), body), 201)

    @router.get("/stats", tags=["server"], summary="the memory's size: users, items by status, episodes")
    async def stats(request: Request) -> JSONResponse:
        return _json(await _core(request).stats())

    router.include_router(user)
    return router


class _Json(JSONResponse):
    """Compact UTF-8 JSON by orjson: the bytes Starlette's JSONResponse writes, several times faster."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def _json(content: Any, status: int = 200) -> JSONResponse:
    """The response as is: the records are plain JSON already, so the route's ``response_model``
    documents them without validating them a second time."""
    return _Json(content, status_code=status)


def _error(status: int, message: Any, headers: dict | None = None) -> Response:
    return Response(error_body(message), status_code=status, headers=headers, media_type="application/json")


async def _http_error(_request: Request, exc: HTTPException) -> Response:
    """Starlette's own refusals (no such route 404, a method the route lacks 405)."""
    return _error(exc.status_code, exc.detail, getattr(exc, "headers", None))


async def _invalid(_request: Request, exc: RequestValidationError) -> Response:
    return _error(422, validation_line(exc.errors()))

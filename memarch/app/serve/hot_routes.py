"""The two requests an agent makes most, ``POST /v1/users/{user_id}/search`` and ``.../memories``
(add), answered without FastAPI's routing, dependency solving and response classes: an adapter over
the serving core (the same checks, `ServingCore` calls and errors as the API's FastAPI routes) at a
fraction of their per-request CPU. `guard.Guard` hands them over once the request is authenticated,
authorised for its user and its body read; every other request goes to FastAPI.
tests/app/serve/test_hot_routes.py sends the same requests, valid and malformed, both ways and
compares the answers byte for byte."""
from __future__ import annotations

import functools
import re
from typing import Awaitable, Callable

import orjson

from memarch.app.serve import schemas as s
from memarch.app.serve.checks import check_query, check_user, decode_body, query_names, validate_body
from memarch.app.serve.core import ServingCore
from memarch.app.serve.errors import Send, send_json, send_refusal

_ROUTE = re.compile(r"^/v1/users/([^/]+)/(search|memories)$")
# route -> (its body, the core's call, the status of its answer), as the API's FastAPI routes declare them
_ROUTES = {"search": (s.SearchRequest, ServingCore.search, 200), "memories": (s.AddRequest, ServingCore.add, 201)}


class HotRoutes:
    """``match(scope)`` -> a handler for a search or an add of ``core``'s memory, or None.

    Args:
        core: the `ServingCore` the API's FastAPI routes use too.
        token_key: where the guard left the request's token in the ASGI scope.
    """

    def __init__(self, core: ServingCore, token_key: str):
        self.core, self.token_key = core, token_key

    def match(self, scope: dict) -> Callable[..., Awaitable[None]] | None:
        if scope["method"] != "POST":
            return None
        m = _ROUTE.match(scope["path"])
        if m is None:
            return None
        return functools.partial(self._answer, m.group(2), m.group(1))

    async def _answer(self, route: str, user_id: str, scope: dict, headers: dict[str, str], body: bytes,
                      send: Send) -> None:
        model, call, status = _ROUTES[route]
        try:  # in FastAPI's order (checks.py)
            value = decode_body(headers.get("content-type", ""), body)
            if scope.get("query_string"):
                check_query(query_names(scope["query_string"]))
            check_user(user_id, scope.get(self.token_key))
            content = await call(self.core, user_id, validate_body(model, value))
        except Exception as exc:  # noqa: BLE001 - every failure is answered in the one error shape
            return await send_refusal(send, self.core.refusal(exc, f"POST {scope['path']}"))
        await send_json(send, status, orjson.dumps(content))

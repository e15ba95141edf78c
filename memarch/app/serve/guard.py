"""The gate in front of the HTTP API (a pure ASGI middleware), so that nothing reaches a route —
no body parsed, no memory read — before the request is authenticated, authorised for the user in
its path, and its body is known to fit the limit.

In order: ``/v1/...`` needs a known bearer token when the server has tokens (401 with
``WWW-Authenticate: Bearer``); its path must be UTF-8 once percent-decoded (400, `checks.check_path`:
else two user ids could be read as one); a token scoped to some user ids may only use
``/v1/users/{its user}/...`` and ``/v1/bulk`` (whose users are in the body: that route checks
every one before it writes), anything else is 403; then the body is read up to ``max_body_bytes``
whatever ``Content-Length`` says and however it is chunked (413 past it), within `BODY_TIMEOUT_S` of
the headers (408 past it), and handed on to the app.
``/health``, ``/docs`` and ``/openapi.json`` are open."""
from __future__ import annotations

import re

import anyio
from typing import Any, Awaitable, Callable

from memarch.app.serve.auth import Token, TokenAuth
from memarch.app.serve.checks import check_path, token_refusal
from memarch.app.serve.errors import Refusal, send_refusal

BODY_TIMEOUT_S = 30.0  # a request's whole body, from its headers (408 past it)
TOKEN_KEY = "memarch.token"  # where the authenticated token is left in the ASGI scope
BODY_SCOPED = frozenset({"/v1/bulk"})  # routes that check a scoped token's users themselves
_USER_PATH = re.compile(r"^/v1/users/([^/]+)(?:/|$)")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]


class Guard:
    """ASGI middleware: bearer authentication, per-user authorisation, the raw body limit."""

    def __init__(self, app: Callable, *, auth: TokenAuth | None, max_body_bytes: int,
                 body_timeout_s: float = BODY_TIMEOUT_S, hot: Any = None):
        self.app, self.auth, self.max_body_bytes = app, auth, max_body_bytes
        self.body_timeout_s = float(body_timeout_s)
        self.hot = hot  # `hot_routes.HotRoutes`: searches and adds answered here, past FastAPI

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope["path"]
        headers = _headers(scope)
        token: Token | None = None
        if path == "/v1" or path.startswith("/v1/"):
            if self.auth is not None:
                token = self.auth.authenticate(headers.get("authorization"))
                if token is None:
                    why = "missing bearer token" if "authorization" not in headers else "invalid bearer token"
                    return await send_refusal(send, Refusal(401, f"{why} (Authorization: Bearer TOKEN)",
                                                            [(b"www-authenticate", b'Bearer realm="memarch"')]))
            try:
                check_path(scope.get("raw_path"))
            except Refusal as bad:
                return await send_refusal(send, bad)
            refusal = scope_refusal(token, path)
            if refusal:
                return await send_refusal(send, Refusal(403, refusal))
        scope[TOKEN_KEY] = token
        declared = headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body_bytes):
            return await send_refusal(send, self._too_big() if declared.isdigit()
                                      else Refusal(400, "malformed Content-Length"))
        body = bytearray()
        # The whole body within `body_timeout_s` of its headers: a Content-Length that promises more
        # than is sent, or a body trickled a byte at a time, cannot hold a connection forever.
        with anyio.move_on_after(self.body_timeout_s) as deadline:
            while True:
                message = await receive()
                if message["type"] != "http.request":  # the client went away
                    return
                body += message.get("body", b"")
                if len(body) > self.max_body_bytes:
                    return await send_refusal(send, self._too_big())
                if not message.get("more_body", False):
                    break
        if deadline.cancelled_caught:
            return await send_refusal(send, Refusal(408, f"request body not received within {self.body_timeout_s:g} s",
                                                    [(b"connection", b"close")]))
        handler = self.hot.match(scope) if self.hot is not None else None
        if handler is not None:
            return await handler(scope, headers, bytes(body), send)
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _too_big(self) -> Refusal:
        return Refusal(413, f"request body over the limit of {self.max_body_bytes} bytes")


def scope_refusal(token: Token | None, path: str) -> str | None:
    """Why ``token`` may not use ``path`` (None: it may). Unscoped tokens may use every route."""
    if token is None or not token.scoped:
        return None
    m = _USER_PATH.match(path)
    if m:
        return token_refusal(token, m.group(1))
    if path in BODY_SCOPED:
        return None
    return "this token is scoped to some users; this route needs an unscoped token"


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in scope.get("headers", []):
        out.setdefault(k.decode("latin-1").lower(), v.decode("latin-1"))
    return out

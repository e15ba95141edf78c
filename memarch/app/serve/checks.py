"""The checks of a request, written once for every server: the user id (the one user-id rule, then
the bearer token's users: `token_refusal`, the only scoped-token check), unknown query parameters,
and a JSON body against its schema (`decode_body`, `validate_body`: FastAPI's reading and its
errors, for the routes answered past FastAPI). Each refuses with a `Refusal` (errors.py), answered
in the one error shape.

In the order FastAPI refuses them (its body read, then the route's dependencies, then the
body's model): a body that is not JSON (422; 400 for bytes that cannot be decoded at all), an
unknown query parameter (422), the user id (400, then 403), the body against its schema (422)."""
from __future__ import annotations

import json
from typing import Any, Iterable
from urllib.parse import parse_qsl

from pydantic import BaseModel, ValidationError

from memarch.app.messages import as_user
from memarch.app.serve import schemas as s
from memarch.app.serve.auth import Token
from memarch.app.serve.errors import Refusal, validation_line
from memarch.errors import MemarchError


NO_BODY = object()  # `decode_body` of an empty body (a JSON ``null`` is None)


def token_refusal(token: Token | None, user_id: str) -> str | None:
    """Why ``token`` may not act for ``user_id`` (None: it may; no token or an unscoped one may
    act for every user)."""
    if token is None or token.allows(user_id):
        return None
    return f"this token may not act for user {user_id!r}"


def check_user(user_id: str, token: Token | None = None) -> None:
    """The user id against the one user-id rule (400), then against the token's users (403)."""
    try:
        as_user(user_id)
    except MemarchError as exc:
        raise Refusal(400, exc) from None
    refusal = token_refusal(token, user_id)
    if refusal:
        raise Refusal(403, refusal)


def check_users(token: Token | None, user_ids: Iterable[str]) -> None:
    """Every user of a request's body against the token (403 naming the first refused, by name)."""
    refused = sorted({u for u in user_ids if token_refusal(token, u)})
    if refused:
        raise Refusal(403, token_refusal(token, refused[0]))


def check_query(names: Iterable[str], known: Iterable[str] = ()) -> None:
    """An unknown query parameter (``?includ_deleted=1``) is a 422, not silently ignored."""
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise Refusal(422, validation_line([{"loc": ("query", unknown[0]), "msg": "unknown query parameter",
                                             "type": "extra_forbidden"}]))


def query_names(raw: bytes) -> list[str]:
    """The parameter names of a raw query string, in order."""
    return [k for k, _ in parse_qsl(raw.decode("latin-1"), keep_blank_values=True)]


def decode_body(content_type: str, body: bytes) -> Any:
    """A JSON body's value as FastAPI reads it before any other check: JSON for ``application/json``
    and ``application/*+json`` (malformed: 422; undecodable: 400), the raw bytes for another type,
    `NO_BODY` when empty. The model is checked after the query and the user (`validate_body`)."""
    if not body:
        return NO_BODY
    kind = content_type.split(";")[0].strip().lower()
    if not (kind == "application/json" or (kind.startswith("application/") and kind.endswith("+json"))):
        return body
    try:
        return json.loads(body)
    except json.JSONDecodeError as exc:
        raise Refusal(422, validation_line([{"loc": ("body", exc.pos), "type": "json_invalid",
                                             "msg": "JSON decode error", "ctx": {"error": exc.msg}}])) from None
    except Exception:  # noqa: BLE001 - FastAPI's answer to a body it cannot decode at all
        raise Refusal(400, "There was an error parsing the body") from None


def validate_body(model: type[BaseModel], value: Any) -> Any:
    """`decode_body`'s value as ``model``, refused (422) with FastAPI's errors."""
    if value is NO_BODY:
        errors = [{"loc": ("body",), "type": "missing", "msg": "Field required"}]
    elif isinstance(value, bytes):
        errors = [{"loc": ("body",), "type": "model_attributes_type", "msg": "Input should be a valid dictionary"}]
    else:
        try:
            return model.model_validate(value)
        except ValidationError as exc:
            errors = [{**e, "loc": ("body", *e["loc"])} for e in exc.errors()]
    raise Refusal(422, validation_line(errors))


def plain(messages: Any) -> Any:
    """Validated messages back to what `Memory.add` takes (dicts, strings)."""
    if isinstance(messages, list):
        return [plain(m) for m in messages]
    return messages.model_dump(exclude_none=True) if isinstance(messages, s.Message) else messages

"""The checks of a request, written once for every server: the path's bytes (`check_path`: UTF-8
text), the user id (the one user-id rule, then the bearer token's users: `token_refusal`, the only
scoped-token check), unknown query parameters, and a JSON body against its schema (`loads_json`:
UTF-8 JSON, for FastAPI's routes too; `decode_body`, `validate_body`: FastAPI's reading and its
errors, for the routes answered past FastAPI). Each refuses with a `Refusal` (errors.py), answered
in the one error shape.

In the order FastAPI refuses them (its body read, then the route's dependencies, then the
body's model): a body that is not JSON, or not UTF-8 (422; 400 for JSON the parser cannot hold at
all: nested too deep, a number of over 4300 digits), an unknown query parameter (422), the user id
(400, then 403), the body against its schema (422). The path's bytes are checked before any of
them, by the guard."""
from __future__ import annotations

import json
from typing import Any, Iterable
from urllib.parse import parse_qsl, unquote_to_bytes

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


def check_path(raw_path: bytes | None) -> None:
    """A path whose percent-encoded bytes are not UTF-8 is a 400 before any route: the server's
    parser would read each bad byte as U+FFFD, so ``Jos%E9`` and ``Jos%F1`` would be one user.
    Ids are taken as the code points sent, never Unicode-normalised (docs/serving.md)."""
    if not raw_path or b"%" not in raw_path:
        return
    for i, segment in enumerate(raw_path.split(b"/")):
        try:
            unquote_to_bytes(segment).decode("utf-8")
        except UnicodeDecodeError:
            shown = segment[:60].decode("latin-1") + ("..." if len(segment) > 60 else "")
            what = "user_id" if i == 3 and raw_path.startswith(b"/v1/users/") else "path"
            raise Refusal(400, f"{what}: not UTF-8 once percent-decoded, got {shown!r} (percent-encode "
                               "the UTF-8 bytes of the text)") from None


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


def loads_json(body: bytes) -> Any:
    """A JSON body's value, read as RFC 8259 says: UTF-8 text (a leading byte order mark ignored).
    Anything else is a `json.JSONDecodeError` at its first bad byte — where `json.loads` would guess
    UTF-16 or UTF-32 from the first bytes, or fail with a ``UnicodeDecodeError`` (a 400 in FastAPI)."""
    try:
        text = body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise json.JSONDecodeError("not UTF-8 (JSON text is UTF-8, RFC 8259)", body.decode("latin-1"),
                                   exc.start) from None
    if "\x00" in text:  # never in JSON text, and where UTF-16 or UTF-32 would have been read
        raise json.JSONDecodeError("a NUL byte (UTF-16 or UTF-32? JSON text is UTF-8, RFC 8259)", text,
                                   text.index("\x00"))
    return json.loads(text)


def decode_body(content_type: str, body: bytes) -> Any:
    """A JSON body's value as FastAPI reads it before any other check: UTF-8 JSON for
    ``application/json`` and ``application/*+json`` (malformed or not UTF-8: 422; too deep for the
    parser: 400), the raw bytes for another type, `NO_BODY` when empty. The model is checked after
    the query and the user (`validate_body`)."""
    if not body:
        return NO_BODY
    kind = content_type.split(";")[0].strip().lower()
    if not (kind == "application/json" or (kind.startswith("application/") and kind.endswith("+json"))):
        return body
    try:
        return loads_json(body)
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

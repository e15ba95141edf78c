"""The DSPy 3.4 engine for the embedded llama.cpp server: a ``dspy.lm15.Request`` in, one
OpenAI-style chat completion in-process, a ``dspy.lm15.Response`` (with token usage) out."""
from __future__ import annotations

import time
from typing import Any, Iterator, Protocol

from dspy.clients.engines.base import validate_request
from dspy.lm15 import (
    InvalidRequestError,
    Message,
    Request,
    Response,
    ServerError,
    TextPart,
    TransportError,
    Usage,
    response_to_events,
)

_FINISH = {"stop": "stop", "length": "length", "tool_calls": "tool_call", "content_filter": "content_filter"}
# Config fields llama.cpp's chat endpoint takes under the same name.
_SAMPLING = ("max_tokens", "temperature", "top_p", "top_k", "seed", "frequency_penalty", "presence_penalty")


class ChatServer(Protocol):
    """What the engine needs from a server: one OpenAI-style chat completion, as dicts."""

    def chat(self, body: dict[str, Any]) -> dict[str, Any]: ...


class LlamaCppEngine:
    """A DSPy engine that sends each request to an in-process llama.cpp server.

    Example::

        with LocalServer() as server:
            lm = dspy.LM("local/smollm2-135m", engine=LlamaCppEngine(server), max_tokens=256)
            print(lm("Say hi"))

    DSPy owns caching, retries and history; the engine makes one attempt. It declares JSON-schema
    support so that ``dspy.JSONAdapter`` asks for constrained decoding, and reshapes DSPy's flat
    ``{"type": "json_schema", "schema": ...}`` into the nested form llama.cpp honours (it silently
    ignores the flat one).

    Every array in the schema without a ``maxItems`` gets ``max_list_items``: DSPy drops pydantic's
    length constraints from the schema, and a small model then repeats list items until
    ``max_tokens`` cuts the JSON off (unparseable).

    Args:
        server: anything with ``chat(body) -> dict`` (a :class:`~memarch.lm.local.LocalServer`).
        model_name: the name reported in responses.
        max_list_items: bound added to unbounded arrays of a JSON schema (None: leave them).
    """

    supports_response_schema = True
    supports_function_calling = False
    supports_reasoning = False
    supported_params = frozenset({"response_format", "temperature", "max_tokens", "top_p", "top_k", "stop", "seed"})

    def __init__(self, server: ChatServer, model_name: str = "smollm2-135m", max_list_items: int | None = 8):
        self.server = server
        self.model_name = model_name
        self.max_list_items = max_list_items

    def complete(self, request: Request) -> Response:
        validate_request(request)
        body = request_to_body(request, self.max_list_items)
        started = time.perf_counter()
        try:
            answer = self.server.chat(body)
        except (ConnectionError, OSError) as exc:
            raise TransportError(f"local model server unreachable: {exc}") from exc
        if not isinstance(answer, dict):
            raise ServerError(f"local model server returned {type(answer).__name__}, not a completion")
        if "error" in answer:
            err = answer["error"]
            message = err.get("message", str(err)) if isinstance(err, dict) else str(err)
            code = err.get("code") if isinstance(err, dict) else None
            cls = InvalidRequestError if code == 400 else ServerError
            raise cls(f"local model server: {message}", status=code if isinstance(code, int) else None)
        return body_to_response(answer, self.model_name, time.perf_counter() - started)

    def stream(self, request: Request) -> Iterator[Any]:
        # The completion is short and in-process: stream it as one piece.
        return response_to_events(self.complete(request))

    def close(self) -> None:
        # The server belongs to its LocalServer context, not to the engine.
        pass


def request_to_body(request: Request, max_list_items: int | None = None) -> dict[str, Any]:
    """The llama.cpp (OpenAI chat) request body for a canonical DSPy request."""
    messages: list[dict[str, str]] = []
    if request.system is not None:
        system = request.system if isinstance(request.system, str) else "".join(
            getattr(p, "text", "") or "" for p in request.system)
        messages.append({"role": "system", "content": system})
    for m in request.messages:
        role = "system" if m.role == "developer" else m.role
        messages.append({"role": role, "content": m.text or ""})
    body: dict[str, Any] = {"messages": messages}
    config = request.config
    for name in _SAMPLING:
        value = getattr(config, name)
        if value is not None:
            body[name] = value
    if config.stop:
        body["stop"] = list(config.stop)
    fmt = config.response_format
    if fmt is not None:
        if fmt.get("type") == "json_schema":
            schema = bound_arrays(fmt["schema"], max_list_items) if max_list_items else fmt["schema"]
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": fmt.get("name", "output"), "schema": schema}}
        else:
            body["response_format"] = {"type": "json_object"}
    return body


def bound_arrays(schema: Any, max_items: int) -> Any:
    """A copy of a JSON schema in which every array without ``maxItems`` has ``max_items``."""
    if isinstance(schema, list):
        return [bound_arrays(s, max_items) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: bound_arrays(v, max_items) for k, v in schema.items()}
    if out.get("type") == "array" and "maxItems" not in out:
        out["maxItems"] = max(max_items, int(out.get("minItems", 0)))
    return out


def body_to_response(answer: dict[str, Any], model_name: str, latency_s: float | None = None) -> Response:
    """A canonical DSPy response from a llama.cpp (OpenAI chat) completion."""
    choices = answer.get("choices") or []
    if not choices:
        raise ServerError("local model server returned no choices")
    choice = choices[0]
    text = (choice.get("message") or {}).get("content") or ""
    usage = answer.get("usage") or {}
    provider_data = {"latency_s": latency_s} if latency_s is not None else None
    return Response(
        id=answer.get("id") or None,
        model=model_name,
        message=Message.assistant([TextPart(text)]),
        finish_reason=_FINISH.get(choice.get("finish_reason") or "stop", "stop"),
        usage=Usage(input_tokens=usage.get("prompt_tokens"), output_tokens=usage.get("completion_tokens")),
        provider_data=provider_data,
    )

"""The chat-format line of a fine-tuning pair (the OpenAI fine-tuning ``messages`` layout, as DSPy's
`BootstrapFinetune` builds it with ``adapter.format_finetune_data``) and the strict check of a line.

Example::

    line = chat_line(pair.predictor, pair.inputs, pair.outputs, adapter="json")
    check_line({**line, "metadata": {...}})   # raises ValueError naming what is wrong
"""
from __future__ import annotations

from typing import Any

ADAPTERS = ("json", "chat")
ROLES = ("system", "user", "assistant")
METADATA = ("module", "signature", "episode", "score", "split", "label")


def make_adapter(name: str) -> Any:
    """``json``: the adapter memarch's modules call their LM with (`Resources.lm_context`);
    ``chat``: DSPy's default, the one `BootstrapFinetune` falls back to."""
    import dspy

    if name not in ADAPTERS:
        raise ValueError(f"adapter {name!r}: expected one of {', '.join(ADAPTERS)}")
    return dspy.JSONAdapter() if name == "json" else dspy.ChatAdapter()


def typed_outputs(signature: Any, outputs: dict[str, Any]) -> dict[str, Any]:
    """``outputs`` validated against the signature's output field types (pydantic models built):
    a label that does not fit its signature raises ValueError."""
    import pydantic

    missing = [n for n in signature.output_fields if n not in outputs]
    if missing:
        raise ValueError(f"missing output field {missing[0]!r}")
    typed = {}
    for name, info in signature.output_fields.items():
        try:
            typed[name] = pydantic.TypeAdapter(info.annotation).validate_python(outputs[name])
        except pydantic.ValidationError as exc:
            first = exc.errors()[0]
            raise ValueError(f"{name}: {first.get('msg')} at {first.get('loc')}") from None
    return typed


def chat_line(predictor: Any, inputs: dict[str, Any], outputs: dict[str, Any], *, adapter: str = "json") -> dict:
    """``{"messages": [system, user, (demos...), assistant]}``: the prompt the predictor's signature
    (instructions, input fields, its demos) makes through ``adapter``, answered with ``outputs``.

    With ``adapter="chat"`` this is exactly ``ChatAdapter().format_finetune_data``; the JSON adapter
    (whose ``format_finetune_data`` DSPy leaves unimplemented) is assembled the same way. The answer
    must parse back through the adapter, so a trained model's reply is one the module can read.
    """
    fmt = make_adapter(adapter)
    signature = predictor.signature
    typed = typed_outputs(signature, outputs)
    messages = fmt.format(signature=signature, demos=list(predictor.demos or []), inputs=inputs)
    answer = fmt.format_assistant_message_content(signature=signature, outputs=typed)
    try:
        fmt.parse(signature, answer)
    except Exception as exc:  # noqa: BLE001 - any parse failure means the line would teach garbage
        raise ValueError(f"the answer does not parse back through the {adapter} adapter: "
                         f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
    return {"messages": [*messages, {"role": "assistant", "content": answer}]}


def check_line(line: Any) -> None:
    """Raise ValueError unless ``line`` is one chat fine-tuning example: ``messages`` of role and
    non-empty string content only, at most one system message and first, at least one user
    message, user and assistant turns alternating, ending on the assistant; and ``metadata``
    with the module, signature, episode, score, split and label."""
    if not isinstance(line, dict) or set(line) - {"messages", "metadata"}:
        raise ValueError("a line is an object with 'messages' and 'metadata' only")
    messages = line.get("messages")
    if not isinstance(messages, list) or len(messages) < 2:
        raise ValueError("'messages' must be a list of at least two messages")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or set(m) != {"role", "content"}:
            raise ValueError(f"message {i}: must have exactly 'role' and 'content'")
        if m["role"] not in ROLES:
            raise ValueError(f"message {i}: role {m['role']!r} is not one of {', '.join(ROLES)}")
        if not isinstance(m["content"], str) or not m["content"].strip():
            raise ValueError(f"message {i}: content must be a non-empty string")
    roles = [m["role"] for m in messages]
    if "system" in roles[1:]:
        raise ValueError("a system message may only come first")
    turns = roles[1:] if roles[0] == "system" else roles
    if not turns or turns[0] != "user" or turns[-1] != "assistant":
        raise ValueError("the conversation must start with a user message and end with the assistant's")
    if any(a == b for a, b in zip(turns, turns[1:])):
        raise ValueError("user and assistant messages must alternate")
    meta = line.get("metadata")
    if not isinstance(meta, dict) or any(k not in meta for k in METADATA):
        raise ValueError(f"'metadata' must give {', '.join(METADATA)}")
    if not isinstance(meta["score"], (int, float)) or isinstance(meta["score"], bool) or not 0 <= meta["score"] <= 1:
        raise ValueError("metadata 'score' must be a number in [0, 1]")
    if meta["split"] == "test":
        raise ValueError("a fine-tuning pair never comes from the test split")

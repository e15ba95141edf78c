"""A scripted LM for tests: a stand-in llama.cpp server that records every request and answers
with the next scripted text, behind a real ``dspy.LM`` (so DSPy's cache and adapters apply)."""
from __future__ import annotations

import dspy

from memarch.lm import LlamaCppEngine


class ScriptedServer:
    """Stands in for the llama.cpp server: answers each chat with the next scripted text."""

    def __init__(self, texts: list[str], prompt_tokens: int = 100, completion_tokens: int = 7):
        self.texts = list(texts)
        self.bodies: list[dict] = []
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens

    def chat(self, body: dict) -> dict:
        self.bodies.append(body)
        text = self.texts.pop(0) if self.texts else "no more answers"
        return {"id": f"c{len(self.bodies)}", "choices": [{"finish_reason": "stop", "message": {"content": text}}],
                "usage": {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}}


def scripted_lm(texts: list[str], *, cache: bool = False, **kw) -> tuple[dspy.LM, ScriptedServer]:
    server = ScriptedServer(texts, **kw)
    lm = dspy.LM("local/scripted", engine=LlamaCppEngine(server), max_tokens=256, temperature=0.0,
                 num_retries=0, cache=cache)
    return lm, server


class DeadServer:
    """An endpoint that is down: every chat is refused (DSPy's transport error, as a closed port)."""

    def __init__(self) -> None:
        self.calls = 0

    def chat(self, body: dict) -> dict:
        self.calls += 1
        raise ConnectionRefusedError("connection refused")


def dead_lm() -> tuple[dspy.LM, DeadServer]:
    """A ``dspy.LM`` whose endpoint is dead, behind the real engine (no retries, no cache)."""
    server = DeadServer()
    return dspy.LM("local/dead", engine=LlamaCppEngine(server), num_retries=0, cache=False), server

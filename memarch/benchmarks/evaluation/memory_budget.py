"""A memory budget as given on the command line — ``2000`` words, or ``10%`` of the raw turn
words a conversation of the benchmark's search split holds — resolved to words per namespace."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from memarch.errors import MemarchError
from memarch.pipeline.retrieval import count_words

_SPEC = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(%?)\s*$")


def raw_turn_words(benchmark: Any) -> dict[str, int]:
    """Words (`count_words`) of every turn of every session, per namespace (conversation)."""
    out: dict[str, int] = {}
    for d in benchmark.dialogues:
        words = sum(count_words(t.text) for s in d.sessions for t in s.turns)
        words += sum(count_words(f"{st.action} {st.observation}") for s in d.sessions for st in s.steps)
        out[d.namespace] = out.get(d.namespace, 0) + words
    return out


@dataclass(frozen=True)
class MemoryBudget:
    """A resolved ``--memory-budget``: words per namespace, and how they were derived.

    Example::

        budget = MemoryBudget.resolve("10%", get_benchmark("generated"))
        budget.words, budget.describe()
        MemoryProgram(arch, config=budget.config())

    Args:
        words: the per-namespace limit.
        spec: what the user wrote.
        share: the percentage as a fraction, None for a plain word count.
        raw_mean: mean raw turn words per namespace of the search split (for a percentage).
        namespaces: how many namespaces that mean is over.
    """

    words: int
    spec: str
    share: float | None = None
    raw_mean: float | None = None
    namespaces: int = 0

    @classmethod
    def parse(cls, spec: str) -> tuple[float | None, int | None]:
        """``(share, None)`` for ``"10%"``, ``(None, words)`` for ``"2000"``; MemarchError otherwise."""
        m = _SPEC.match(str(spec))
        if m is None:
            raise MemarchError(f"--memory-budget {spec!r}: expected words per namespace (e.g. 2000) or a "
                               "percentage of the raw turn words (e.g. 10%)")
        value, percent = float(m.group(1)), bool(m.group(2))
        if percent:
            if not 0 < value <= 100:
                raise MemarchError(f"--memory-budget {spec!r}: a percentage must be in (0, 100]")
            return value / 100.0, None
        if value != int(value) or value < 1:
            raise MemarchError(f"--memory-budget {spec!r}: words must be a positive integer")
        return None, int(value)

    @classmethod
    def resolve(cls, spec: str, benchmark: Any) -> "MemoryBudget":
        """Words for ``spec``; a percentage is of the mean raw turn words per namespace of
        ``benchmark``'s search split (never of the split it is scored on)."""
        share, words = cls.parse(spec)
        if share is None:
            return cls(words=int(words), spec=str(spec).strip())
        from memarch.benchmarks.base import STREAM

        if benchmark.protocol != STREAM:
            raise MemarchError(f"--memory-budget {spec}: a percentage needs a conversation benchmark (raw turns "
                               f"to count); {benchmark.name} is an agent benchmark, give words instead")
        raw = raw_turn_words(benchmark.split("search"))
        if not raw or not sum(raw.values()):
            raise MemarchError(f"--memory-budget {spec}: the search split of {benchmark.name} has no turns to count")
        mean = sum(raw.values()) / len(raw)
        return cls(words=max(1, round(share * mean)), spec=str(spec).strip(), share=share, raw_mean=mean,
                   namespaces=len(raw))

    def config(self) -> dict[str, Any]:
        """The program's module config that carries the budget."""
        return {"manager": {"memory_budget": self.words}}

    def describe(self) -> str:
        if self.share is None:
            return f"memory budget: {self.words} words per namespace (hard limit after every write)"
        return (f"memory budget: {self.words} words per namespace = {self.share * 100:g}% of the mean raw turn "
                f"words of a conversation of the search split ({self.raw_mean:.0f} over {self.namespaces}); "
                "hard limit after every write")

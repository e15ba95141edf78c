"""What a study optimises: ``quality`` (the trial's score, maximised) alone, or with
costs that are minimised — ``--objectives quality,memory_words,read_p95``. Parsing, Optuna
directions and a trial's values for the objectives chosen."""
from __future__ import annotations

from typing import Any, Sequence

from memarch.errors import MemarchError

QUALITY = "quality"
# objective name -> the TrialResult.cost entry it reads (costs are minimised)
COSTS = {"memory_words": "memory_words", "read_p95": "read_p95_ms", "write_s": "write_s", "lm_tokens": "lm_tokens"}
NAMES = (QUALITY, *COSTS)
UNITS = {QUALITY: "", "memory_words": " words", "read_p95": " ms", "write_s": " s", "lm_tokens": " LM tok"}
SINGLE = (QUALITY,)
# A single-objective study breaks exact quality ties by these costs, in order.
TIE_BREAK = ("memory_words", "read_p95")
# Cost names that studies saved by earlier code hold (in their objectives and their trials' costs),
# read as today's: memory is counted in words, as the context budget is.
OLD_COSTS = {"memory_tokens": "memory_words", "memory_tokens_max_ns": "memory_words_max_ns"}


def saved_objectives(names: Sequence[str]) -> tuple[str, ...]:
    """The objectives a saved study holds, by today's names (``memory_tokens``: earlier code's)."""
    return tuple(OLD_COSTS.get(n, n) for n in names)


def parse_objectives(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"quality,memory_words"`` -> ``("quality", "memory_words")``; None -> ``("quality",)``.
    Quality comes first, each name once; anything else is a MemarchError (one line).

    Example::

        parse_objectives("quality,read_p95")   # ("quality", "read_p95")
    """
    if text is None:
        return SINGLE
    names = [n.strip() for n in (text.split(",") if isinstance(text, str) else text) if n.strip()]
    bad = [n for n in names if n not in NAMES]
    if bad:
        raise MemarchError(f"--objectives: unknown {', '.join(bad)}; expected quality followed by any of "
                           f"{', '.join(COSTS)}")
    if not names or names[0] != QUALITY:
        raise MemarchError(f"--objectives must start with quality (e.g. quality,memory_words), got {text!r}")
    if len(set(names)) != len(names):
        raise MemarchError(f"--objectives names an objective twice: {text!r}")
    return tuple(names)


def directions(objectives: Sequence[str]) -> list[str]:
    """Optuna directions: quality maximised, every cost minimised."""
    return ["maximize" if n == QUALITY else "minimize" for n in objectives]


def value_of(result: Any, name: str) -> float:
    """One objective's value of a `TrialResult` (a cost the trial did not report counts as 0)."""
    if name == QUALITY:
        return float(result.score)
    return float((result.cost or {}).get(COSTS[name], 0.0))


def values_of(result: Any, objectives: Sequence[str]) -> tuple[float, ...]:
    return tuple(value_of(result, n) for n in objectives)


def tie_key(result: Any) -> tuple[float, ...]:
    """Sort key among results of equal quality: lower memory_words, then lower read_p95."""
    return tuple(value_of(result, n) for n in TIE_BREAK)


def describe(objectives: Sequence[str], values: Sequence[float]) -> str:
    """"0.8123, 1234 words" — values with their units."""
    return ", ".join(f"{v:.4f}" if n == QUALITY else f"{v:.4g}{UNITS[n]}" for n, v in zip(objectives, values))

"""The ``--knob KEY=VALUE`` option of every command that builds a benchmark (compile, compare,
landscape build, data convert): one grammar, one parser.

VALUE is read as, in this order: integers separated by commas (``tasks=1,2``, ``tasks=3,``) -> a
list of integers; JSON (``conversations=3``, ``fraction=0.5``, ``shuffle=true``,
``tasks=[1,2]``) -> that value; anything else -> the text itself (``split_by=dialogue``).
"""
from __future__ import annotations

import json
from typing import Any

from memarch.errors import MemarchError

METAVAR = "KEY=VALUE"
HELP = ("benchmark knob, repeatable: e.g. --knob conversations=3, --knob tasks=1,2 (a list of integers); "
        "VALUE is read as integers separated by commas, else JSON, else text")


def add_knob_argument(p: Any) -> None:
    p.add_argument("--knob", action="append", default=[], metavar=METAVAR, help=HELP)


def parse_knob(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` -> (key, value) by the module's grammar; a malformed one is one `MemarchError` line."""
    key, sep, raw = text.partition("=")
    if not key.strip() or not sep or not raw.strip():
        raise MemarchError(f"--knob takes {METAVAR}, not {text!r}")
    parts = [p.strip() for p in raw.split(",")]
    if "," in raw and all(p.lstrip("-").isdigit() for p in parts if p) and any(parts):
        return key.strip(), [int(p) for p in parts if p]
    try:
        return key.strip(), json.loads(raw)
    except json.JSONDecodeError:
        return key.strip(), raw


def parse_knobs(items: list[str]) -> dict[str, Any]:
    """Every ``--knob`` given, in order (a key given twice keeps its last value)."""
    return dict(parse_knob(item) for item in items)

"""`Knob`: a numeric hyperparameter a module declares in the registry (name, type, range, log
scale, default) — what the ``full`` search space tunes beside the categorical choices, and what an
architecture's ``params`` may set."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

KINDS = ("int", "float")
# Knobs applied to the program rather than passed to the module's config.
PROGRAM_KNOBS = {("retriever", "top_k")}


@dataclass(frozen=True)
class Knob:
    """One numeric hyperparameter of a module.

    Example::

        @register("retriever", "mmr", knobs=(Knob("mmr_lambda", "float", 0.0, 1.0, default=0.5,
                                                    description="1 relevance, 0 diversity"),))
        class MMRRetriever(Retriever): ...

    Args:
        name: the config key the module reads (``top_k`` of a retriever sets the program's items per read).
        kind: ``"int"`` or ``"float"``.
        low, high: the inclusive range searched and accepted.
        log: searched on a log scale.
        default: the module's own value when the knob is not set (what presets use).
        description: one line for the docs table.
        family_defaults: ``(family, value)`` pairs where the module's default depends on the family
            (managers dedup near-verbatim repeats only, at 0.98, in conversation memory).
        group: the shared concern a knob belongs to when many modules declare it (``"pack"``,
            ``"time-aware"``, ``"entity-keyed"``): the registry's table shows such knobs by group.
    """

    name: str
    kind: str
    low: float
    high: float
    log: bool = False
    default: float | int | None = None
    description: str = ""
    family_defaults: tuple[tuple[str, float | int], ...] = ()
    group: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"knob {self.name!r}: kind must be one of {KINDS}, not {self.kind!r}")
        if not self.low <= self.high or (self.log and self.low <= 0):
            raise ValueError(f"knob {self.name!r}: bad range [{self.low}, {self.high}] (log={self.log})")
        for value in [self.default, *(v for _, v in self.family_defaults)]:
            if value is not None and self.check(value):
                raise ValueError(f"knob {self.name!r}: default {value!r} {self.check(value)}")

    def default_for(self, family: str | None) -> float | int | None:
        return dict(self.family_defaults).get(family, self.default) if family else self.default

    def check(self, value: Any) -> str | None:
        """None when ``value`` is acceptable, else what is wrong with it (for a Violation)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"must be a{'n integer' if self.kind == 'int' else ' number'}, not {value!r}"
        if self.kind == "int" and not float(value).is_integer():
            return f"must be an integer, not {value!r}"
        if not math.isfinite(value) or not self.low <= value <= self.high:
            return f"= {value!r} is outside [{_fmt(self.low)}, {_fmt(self.high)}]"
        return None

    def coerce(self, value: Any) -> float | int:
        """The value in the knob's type (an int knob given 8.0 reads 8)."""
        return int(value) if self.kind == "int" else float(value)

    def range_text(self) -> str:
        default = "auto" if self.default is None else _fmt(self.default)
        fams = "".join(f", {fam} {_fmt(v)}" for fam, v in self.family_defaults)
        return f"{self.kind} [{_fmt(self.low)}, {_fmt(self.high)}]{' log' if self.log else ''}, default {default}{fams}"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "low": self.low, "high": self.high, "log": self.log,
                "default": self.default, "description": self.description,
                "family_defaults": dict(self.family_defaults), "group": self.group}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Knob":
        """The knob `to_dict` wrote."""
        return cls(**{**d, "family_defaults": tuple(d["family_defaults"].items())})


def _fmt(v: float | int) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


# Every retriever's items per read. Its default is the evaluation's (B / 10, at least 4: 20 at
# the default budget of 200 words), so it is resolved by whoever knows the budget.
TOP_K = Knob("top_k", "int", 2, 64, log=True, default=None,
             description="items per read (default: the evaluation's, B/10 and at least 4)")

"""A trace-backed move of the guided search (`NumericMove`: a knob's, or a module's) and the rule
that backs it with evidence (`backed`: enough of the leader's retrieve failures it could recover)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

MIN_SHARE = 0.2  # share of the retrieve failures a move must be able to recover
MIN_QUERIES = 2


@dataclass
class NumericMove:
    """A recommended knob change (``key`` a param key) or module change (``key`` the field,
    ``retrieve``; ``before``/``after`` module names) with the evidence behind it.

    Example::

        NumericMove("retrieve.top_k", 4, 8, share=0.31, recovered=11, failures=35,
                    text="retrieve.top_k 4 -> 8: 31% of the retrieve failures had the gold item at rank 5-8")
    """

    key: str
    before: float | int | str
    after: float | int | str
    share: float
    recovered: int
    failures: int
    text: str
    evidence_ids: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def backed(key: str, before: float | int | str, after: float | int | str, hits: list, failures: list,
           move: str, why: str) -> NumericMove | None:
    """The move when its evidence holds: at least `MIN_QUERIES` hits, `MIN_SHARE` of the failures."""
    share = len(hits) / len(failures) if failures else 0.0
    if len(hits) < MIN_QUERIES or share < MIN_SHARE:
        return None
    text = f"{move}: {share:.0%} of the retrieve failures ({len(hits)} of {len(failures)}) {why}"
    return NumericMove(key, before, after, round(share, 4), len(hits), len(failures), text,
                       [o.query_id for o in hits[:5]])

"""`EvaluationRecord`: how a saved program was scored — benchmark, data file and its sha256, knobs,
split, metric, context budget, top_k and the reported scores — so a reload can reproduce them."""
from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memarch.errors import DataError

SCORE_SPLITS = ("search", "validation", "test")
# The keys of records saved by earlier code, read as today's (a saved program keeps loading).
OLD_KEYS = {"objective": "metric", "budget_tokens": "context_budget"}


def data_sha256(path: str | Path | None) -> str | None:
    """sha256 of a data file; of a directory, over its files' relative names and contents."""
    if path is None:
        return None
    path = Path(path)
    h = hashlib.sha256()
    if path.is_file():
        files = [(path.name, path)]
    elif path.is_dir():
        files = sorted((p.relative_to(path).as_posix(), p) for p in path.rglob("*") if p.is_file())
    else:
        return None
    for name, p in files:
        if path.is_dir():
            h.update(name.encode() + b"\0")
        with open(p, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


@dataclass
class EvaluationRecord:
    """The settings a program's reported scores were measured under, and the scores.

    Example::

        record = metric.evaluation_record(scores={"search": 0.61, "validation": 0.58, "test": 0.6})
        bench = recorded_benchmark(record)  # memarch.benchmarks: the same benchmark, data and split
        record.scores["test"], record.metric

    Args:
        benchmark: benchmark name (``get_benchmark``).
        metric: the metric the reported numbers are (``answer_recall``, ``qa_f1``, ...).
        context_budget: context budget in words the trials read with (None: unlimited).
        top_k: items per read the trials used.
        data: the dataset path (absolute), None for generated benchmarks.
        data_sha256: fingerprint of the data at compile time.
        knobs: benchmark constructor keyword arguments.
        split: ``{"seed", "split_by", "fractions"}`` of the benchmark's split (its ``split_rule()``).
        limit: only the first N questions of each split were scored (None: all).
        scores: the reported metric per split (search / validation / test).
    """

    benchmark: str
    metric: str
    context_budget: int | None
    top_k: int
    data: str | None = None
    data_sha256: str | None = None
    knobs: dict[str, Any] = field(default_factory=dict)
    split: dict[str, Any] = field(default_factory=dict)
    limit: int | None = None
    scores: dict[str, float | None] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "program") -> "EvaluationRecord":
        """Validate a saved ``evaluation`` block; anything malformed is one `DataError` line."""
        where = f"{source}: malformed 'evaluation' block"
        if not isinstance(data, dict):
            raise DataError(f"{where} (expected an object, got {type(data).__name__})")
        data = {OLD_KEYS.get(k, k): v for k, v in data.items()}  # a file of an earlier release
        unknown = sorted(set(data) - {f for f in cls.__dataclass_fields__})
        if unknown:
            raise DataError(f"{where} (unknown field {unknown[0]!r})")
        for name, kinds in (("benchmark", str), ("metric", str), ("top_k", int)):
            if not isinstance(data.get(name), kinds) or isinstance(data.get(name), bool):
                raise DataError(f"{where} ({name!r} missing or not a {kinds.__name__})")
        if "context_budget" not in data:
            raise DataError(f"{where} ('context_budget' missing; null means unlimited)")
        if data["top_k"] < 1:
            raise DataError(f"{where} ('top_k' must be at least 1, not {data['top_k']})")
        for name in ("context_budget", "limit"):
            value = data.get(name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise DataError(f"{where} ({name!r} must be a positive integer or null, not {value!r})")
        for name in ("data", "data_sha256"):
            if data.get(name) is not None and not isinstance(data[name], str):
                raise DataError(f"{where} ({name!r} must be a string or null)")
        for name in ("knobs", "split", "scores"):
            if not isinstance(data.get(name, {}), dict):
                raise DataError(f"{where} ({name!r} must be an object)")
        for split, value in (data.get("scores") or {}).items():
            if split not in SCORE_SPLITS or not (value is None or (isinstance(value, (int, float))
                                                                   and not isinstance(value, bool))):
                raise DataError(f"{where} (score {split!r}: {value!r})")
        fractions = (data.get("split") or {}).get("fractions")
        if fractions is not None and (not isinstance(fractions, dict) or set(fractions) != set(SCORE_SPLITS)
                                      or not all(isinstance(v, (int, float)) for v in fractions.values())
                                      or not math.isclose(sum(fractions.values()), 1.0, abs_tol=1e-6)):
            raise DataError(f"{where} (split fractions must give search, validation and test shares "
                            f"summing to 1, not {fractions!r})")
        return cls(**{k: (dict(v) if isinstance(v, dict) else v) for k, v in data.items()})

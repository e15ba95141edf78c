"""`Landscape`: a tabular benchmark (the NAS-Bench way) — every architecture of a space (or a
seeded sample) evaluated once on all questions, per-query outcomes and costs in one .npz, so a
search can be replayed against it for free (`memarch.optimizers.landscapes.evaluator` scores by
lookup in it)."""
from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from memarch.benchmarks.base import SPLITS
from memarch.errors import DataError, MemarchError
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.files import atomic_write_bytes
from memarch.pipeline.trial import MODULES, QueryOutcome, TrialResult

FORMAT = "memarch.landscape/1"
NONE = "none"  # the row of the no-memory baseline
QUERY_ARRAYS = ("query_id", "query_split", "query_category", "question", "gold", "query_evidence")
# Cost arrays of files built by earlier code, read by today's names (memory is counted in words).
OLD_ARRAYS = {"cost_memory_tokens": "cost_memory_words", "cost_memory_tokens_max_ns": "cost_memory_words_max_ns"}
COSTS = ("memory_items", "memory_words", "memory_words_max_ns", "write_s", "read_s", "read_p50_ms",
         "read_p95_ms", "embeddings_computed")  # a landscape built before one of them lacks its array
EVIDENCE_SEP = "\x1f"


def key_of(architecture: Architecture | str | None) -> str:
    if architecture is None:
        return NONE
    return architecture if isinstance(architecture, str) else architecture.key()


def architecture_of(key: str) -> Architecture | None:
    """The inverse of ``Architecture.key()`` (None for the no-memory row)."""
    if key == NONE:
        return None
    encode, store, retrieve, manage, *knobs = key.split("|")
    params = {}
    for pair in knobs[0].split(",") if knobs else ():  # "retrieve.pack=1,retrieve.time_weight=1.0"
        name, _, value = pair.partition("=")
        params[name] = json.loads(value)  # the repr of an int or a float, as key() wrote it
    return Architecture(tuple(encode.split("+")), store, retrieve, manage, params=params)


class _Split:
    """What every lookup on one split needs, computed once: query indices, ids, categories, text."""

    def __init__(self, land: "Landscape", code: int):
        a = land.arrays
        self.idx = np.flatnonzero(a["query_split"] == code)
        self.ids = a["query_id"][self.idx].tolist()
        cats = a["query_category"][self.idx]
        self.categories, self.cat_code = np.unique(cats, return_inverse=True)
        self.categories = self.categories.tolist()
        self.cat_count = np.bincount(self.cat_code, minlength=len(self.categories))
        self.cat_list = cats.tolist()
        self.base = [{"question": q, "gold_answer": g}
                     for q, g in zip(a["question"][self.idx].tolist(), a["gold"][self.idx].tolist())]
        self.evidence = [e.split(EVIDENCE_SEP) if e else [] for e in a["query_evidence"][self.idx].tolist()]
        self.has = {o: a[f"has_{o}"][self.idx] for o in land.metrics}
        rows = np.stack([self.has[o] for o in land.metrics], axis=1) if land.metrics else np.ones((len(self.idx), 0), bool)
        self.has_rows = [tuple(r) for r in rows.tolist()]
        self.has_all = rows.all(axis=1).tolist()
        self.static = list(zip(self.ids, self.base, self.cat_list, self.has_all, self.has_rows, self.evidence))


class Landscape:
    """Per-query outcomes and costs of every architecture of a space on one benchmark.

    Example::

        land = Landscape.load("generated.npz")
        land.result(Architecture(("turn",), "vector", "hybrid", "lightweight"), "search").score
        land.metric_values("test", "answer_recall").max()     # the oracle's test score

    Args:
        meta: the build's description (format, benchmark, split, budget, space, metrics, ...).
        arrays: ``keys``, ``group``, ``score_<metric>`` [A, Q], ``loss_stage`` [A, Q],
            ``cost_<name>`` [A], and the query table (``query_id``, ``query_split``, ...,
            ``has_<metric>`` [Q]: the question has a value of it, else the score is a fallback).
        path: where it was loaded from (reported in results).
    """

    def __init__(self, meta: dict[str, Any], arrays: dict[str, np.ndarray], path: str | Path | None = None):
        if "metrics" not in meta and "objectives" in meta:  # a file built by earlier code
            meta = {("metrics" if k == "objectives" else k): v for k, v in meta.items()}
        self.meta = meta
        self.arrays = arrays
        self.path = str(path) if path is not None else None
        self.keys: list[str] = arrays["keys"].tolist()
        self._index = {k: i for i, k in enumerate(self.keys)}
        self.metrics: tuple[str, ...] = tuple(meta["metrics"])
        self._splits: dict[str, _Split] = {}
        self._values: dict[tuple[str, str], np.ndarray] = {}
        self._archs: dict[int, Architecture | None] = {}

    # -- files ------------------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | Path) -> "Landscape":
        """Read a landscape file; a missing or foreign file is a one-line DataError."""
        path = Path(path)
        if not path.is_file():
            raise DataError(f"{path}: not found (expected a landscape .npz file)")
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {OLD_ARRAYS.get(name, name): data[name] for name in data.files}
            meta = json.loads(str(arrays.pop("meta")[()]))
        except (OSError, ValueError, KeyError, zipfile.BadZipFile, json.JSONDecodeError) as exc:
            raise DataError(f"{path}: not a landscape file ({exc.__class__.__name__}: {exc})") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise DataError(f"{path}: not a landscape file (expected format {FORMAT!r})")
        try:
            return cls(meta, arrays, path)
        except KeyError as exc:
            raise DataError(f"{path}: not a complete landscape file (no {exc})") from None

    def save(self, path: str | Path) -> Path:
        """Write one compressed .npz atomically (a temp file in the same directory, then replace)."""
        buf = io.BytesIO()
        np.savez_compressed(buf, meta=np.array(json.dumps(self.meta)), **self.arrays)
        atomic_write_bytes(path, buf.getvalue())
        self.path = str(path)
        return Path(path)

    # -- the table --------------------------------------------------------------------------------
    @property
    def family(self) -> str:
        return self.meta["family"]

    @property
    def benchmark(self) -> str:
        return self.meta["benchmark"]

    @property
    def default_metric(self) -> str:
        return "answer_span" if "answer_span" in self.metrics else self.metrics[0]

    @property
    def splits(self) -> dict[str, np.ndarray]:
        """Split name -> indices of its questions in the query table (stream order)."""
        return {s: self._split(s).idx for s in SPLITS}

    @property
    def presets(self) -> dict[str, str]:
        """Preset name -> key, for the presets in the landscape."""
        return {n: k for n, k in self.meta.get("presets", {}).items() if k in self._index}

    def __len__(self) -> int:
        return len(self.keys)

    def __contains__(self, architecture: Architecture | str | None) -> bool:
        return key_of(architecture) in self._index

    def index(self, architecture: Architecture | str | None) -> int:
        """Row of an architecture (or key; None: the no-memory row); KeyError when absent."""
        return self._index[key_of(architecture)]

    def architecture(self, row: int) -> Architecture | None:
        if row not in self._archs:
            self._archs[row] = architecture_of(self.keys[row])
        return self._archs[row]

    def cost(self, name: str) -> np.ndarray:
        return self.arrays[f"cost_{name}"]

    def scores(self, metric: str) -> np.ndarray:
        """[A, Q] per-query scores of ``metric`` (its fallback where the question has no value)."""
        self._check_metric(metric)
        return self.arrays[f"score_{metric}"]

    def _check_metric(self, metric: str) -> None:
        if metric not in self.metrics:
            raise MemarchError(f"metric {metric!r} is not stored in this landscape "
                               f"(stored: {', '.join(self.metrics)})")

    def _split(self, split: str) -> _Split:
        if split not in self._splits:
            if split not in SPLITS:
                raise MemarchError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
            self._splits[split] = _Split(self, SPLITS.index(split))
        return self._splits[split]

    def metric_values(self, split: str, metric: str | None = None) -> np.ndarray:
        """[A] mean ``metric`` over the split's questions, per architecture."""
        metric = metric or self.default_metric
        key = (split, metric)
        if key not in self._values:
            idx = self._split(split).idx
            sc = self.scores(metric)[:, idx].astype(np.float64)
            self._values[key] = sc.mean(axis=1) if len(idx) else np.zeros(len(self.keys))
        return self._values[key]

    # -- a trial as a lookup ----------------------------------------------------------------------
    def result(self, architecture: Architecture | str | None, split: str, metric: str | None = None,
               threshold: float = 0.5) -> TrialResult:
        """The `TrialResult` evaluate() gave this architecture on ``split`` (per-query scores,
        success at ``threshold``, attribution of the failures, costs of the whole-stream run)."""
        metric = metric or self.default_metric
        self._check_metric(metric)
        row = self.index(architecture)
        s = self._split(split)
        a = self.arrays
        score = a[f"score_{metric}"][row, s.idx]
        ok = score >= threshold
        stage = a["loss_stage"][row, s.idx]
        lost = np.where(ok, -1, stage)
        names = self.metrics
        columns = [a[f"score_{o}"][row, s.idx].tolist() for o in names]
        outcomes = []
        new, attrs = QueryOutcome.__new__, [None, *MODULES]
        for (qid, base, cat, has_all, has, gold), sc, good, st, vals in zip(
                s.static, score.tolist(), ok.tolist(), lost.tolist(), zip(*columns)):
            evidence = base.copy()
            if has_all:
                evidence.update(zip(names, vals))
            else:
                evidence.update((n, v) for n, v, h in zip(names, vals, has) if h)
            if not good:
                evidence["gold"] = gold
            # Built without __init__: a lookup makes ~10^3 of these and the replay ~10^5 lookups.
            o = new(QueryOutcome)
            o.__dict__ = {"query_id": qid, "score": sc, "success": good, "category": cat,
                          "attribution": attrs[st + 1], "evidence": evidence, "retrieved_ids": []}
            outcomes.append(o)
        sc64 = score.astype(np.float64)
        scores = {}
        for o in self.metrics:
            m = s.has[o]
            if m.any():
                scores[o] = float(a[f"score_{o}"][row, s.idx][m].astype(np.float64).mean())
        scores["questions"] = float(len(s.idx))
        if "hit@1" in self.metrics:  # as evaluate() counts them: questions with no gold evidence ids
            scores["retrieval_skipped"] = float(len(s.idx) - int(s.has["hit@1"].sum()))
        by_cat = np.bincount(s.cat_code, weights=sc64, minlength=len(s.categories))
        hist = np.bincount(lost[lost >= 0], minlength=len(MODULES))
        return TrialResult(
            architecture=self.architecture(row), benchmark=self.benchmark, split=split,
            score=float(sc64.mean()) if len(sc64) else 0.0, scores=scores,
            per_category={c: float(by_cat[j] / s.cat_count[j]) for j, c in enumerate(s.categories)},
            cost={name: float(a[f"cost_{name}"][row]) for name in COSTS if f"cost_{name}" in a},
            outcomes=outcomes, attribution={m: int(hist[j]) for j, m in enumerate(MODULES)},
            metadata={"metric": metric, "protocol": "stream", "success_threshold": threshold,
                      "context_budget": self.meta.get("context_budget"), "top_k": self.meta.get("top_k"),
                      "landscape": self.path, "group": int(a["group"][row])})


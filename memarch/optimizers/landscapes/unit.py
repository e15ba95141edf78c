"""One unit of a landscape build: the architectures sharing encoders and a store. Each manager's
write pass runs once and is read by every retriever (reads never change memory); a read is reused
from another manager's pass wherever the two memories have the same digest at that read point."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from memarch.optimizers.landscapes.digest import namespace_digest
from memarch.pipeline.architecture import Architecture
from memarch.benchmarks.evaluation.costs import memory_costs, read_costs
from memarch.benchmarks.evaluation.question_scoring import metric_score
from memarch.benchmarks.evaluation.settings import EvaluationSettings
from memarch.benchmarks.evaluation.stream import run_stream
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.program import MemoryProgram
from memarch.pipeline.registry import REGISTRY
from memarch.pipeline.retrieval import Retrieval, ScoredItem
from memarch.pipeline.trial import MODULES
from memarch.pipeline.retrieval import DEFAULT_CONTEXT_BUDGET

if TYPE_CHECKING:
    from memarch.benchmarks.base import Benchmark
    from memarch.pipeline.episodes import Query
    from memarch.pipeline.resources import Resources
    from memarch.pipeline.space import ArchitectureSpace
    from memarch.pipeline.trial import TrialResult

SHARED_WRITE = "write shared across retrievers"
SHARED_MEMORY = "managers left identical memory"
SINGLE = "one architecture"


@dataclass
class Unit:
    """The architectures of one (encoders, store); ``encoders=None`` is the no-memory row.

    Example::

        unit = Unit(("turn",), "vector", [Architecture(("turn",), "vector", "hybrid", "lightweight")])
        unit.id, unit.expected_cost()     # ("turn|vector", 3.0)

    Args:
        encoders: the canonical encoder set (None: no memory).
        store: the store.
        architectures: the unit's architectures (any retrievers and managers valid with the store).
    """

    encoders: tuple[str, ...] | None
    store: str | None
    architectures: list[Architecture] = field(default_factory=list)

    @property
    def id(self) -> str:
        return "none" if self.encoders is None else f"{'+'.join(self.encoders)}|{self.store}"

    def expected_cost(self) -> float:
        """Relative cost for balancing shards: a write pass per manager (more encoders and the
        graph store write more), a read pass per architecture."""
        if self.encoders is None:
            return 0.1
        write = (1.0 + 0.5 * (len(self.encoders) - 1)) * (3.0 if self.store == "graph" else 1.0)
        return 2.0 * write * len({a.manage for a in self.architectures}) + len(self.architectures)


@dataclass
class _Snapshot:
    """What a computed read returned, copied at read time (items change in place later)."""

    context: str
    items: list[tuple]
    latency: float
    source: int  # the pass that computed it

    @classmethod
    def of(cls, r: Retrieval, latency: float, source: int) -> "_Snapshot":
        return cls(r.context, [(s.item.id, s.item.kind, s.item.text, list(s.item.source_ids), s.item.episode_id,
                                s.item.event_time, s.item.namespace, s.item.status, s.score) for s in r.items],
                   latency, source)

    def retrieval(self, query: "Query") -> Retrieval:
        items = [ScoredItem(MemoryItem(text=t, kind=k, id=i, source_ids=list(src), episode_id=ep, event_time=at,
                                       namespace=ns, status=st), sc)
                 for i, k, t, src, ep, at, ns, st, sc in self.items]
        return Retrieval(query=query, items=items, context=self.context, trace={"reused_from_pass": self.source})


class _Pass:
    """One manager's write pass: the digest at the current read point, and one reader per retriever
    that serves a read from ``memo`` when an earlier pass read the same memory."""

    def __init__(self, number: int, program: MemoryProgram, memo: dict | None):
        self.number, self.program, self.memo = number, program, memo
        self.digest: str | None = None
        self.digest_s = 0.0
        self.sources: set[int] = set()

    def on_read_point(self, namespace: str, trace: Any) -> None:
        if self.memo is None:
            return
        t0 = time.perf_counter()
        d = namespace_digest(self.program.store, namespace, trace, actor=self.program.manager.actor)
        self.digest = None if d is None else f"{type(self.program.store).__name__}:{d}"
        self.digest_s += time.perf_counter() - t0

    def reader(self, retriever: Any, reader_id: tuple) -> "_Reader":
        return _Reader(self, retriever, reader_id)


class _Reader:
    def __init__(self, p: _Pass, retriever: Any, reader_id: tuple):
        self.p, self.retriever, self.reader_id = p, retriever, reader_id
        self.latency: list[float] = []
        self.computed = self.reused = 0

    def __call__(self, query: "Query", *, top_k: int | None = None, context_budget: int | None = None) -> Retrieval:
        p, program = self.p, self.p.program
        key = None if p.digest is None else (p.digest, self.reader_id, query.id)
        hit = p.memo.get(key) if key is not None else None
        if hit is not None:
            self.reused += 1
            self.latency.append(hit.latency)
            p.sources.add(hit.source)
            return hit.retrieval(query)
        t0 = time.perf_counter()
        r = self.retriever.retrieve(query, program.store, top_k=top_k or program.top_k,
                                    context_budget=context_budget if context_budget is not None else program.context_budget)
        dt = time.perf_counter() - t0
        self.computed += 1
        self.latency.append(dt)
        if key is not None:
            p.memo[key] = _Snapshot.of(r, dt, p.number)
        return r


@dataclass
class UnitRows:
    """A unit's rows: keys, per-query scores per metric, loss stages, costs, local group ids.

    Example::

        rows = evaluate_unit(unit, bench, space, resources, context_budget=DEFAULT_CONTEXT_BUDGET, top_k=20,
                             query_ids=plan.query_ids, metrics=plan.metrics)
        rows.keys, rows.groups, rows.stats["reads_reused"]
    """

    keys: list[str] = field(default_factory=list)
    scores: dict[str, list[np.ndarray]] = field(default_factory=dict)
    loss_stage: list[np.ndarray] = field(default_factory=list)
    has: dict[str, np.ndarray] = field(default_factory=dict)
    costs: dict[str, list[float]] = field(default_factory=dict)
    group: list[int] = field(default_factory=list)
    groups: list[dict] = field(default_factory=list)
    stats: dict[str, float] = field(default_factory=dict)

    def add(self, key: str, result: "TrialResult", query_ids: list[str], metrics: list[str],
            costs: dict[str, float], group: int) -> None:
        got = [o.query_id for o in result.outcomes]
        if got != query_ids:
            raise RuntimeError(f"{key}: the stream asked {len(got)} questions, not the {len(query_ids)} planned")
        self.keys.append(key)
        for o in metrics:
            self.scores.setdefault(o, []).append(np.array(
                [metric_score(out.evidence, o) for out in result.outcomes], dtype=np.float32))
            has = np.array([out.evidence.get(o) is not None for out in result.outcomes], dtype=bool)
            if o in self.has and not np.array_equal(self.has[o], has):
                raise RuntimeError(f"{key}: whether a question has a value of {o} depends on the architecture")
            self.has[o] = has
        self.loss_stage.append(np.array([MODULES.index(out.evidence["loss_stage"])
                                         if out.evidence.get("loss_stage") else -1
                                         for out in result.outcomes], dtype=np.int8))
        for name, v in costs.items():
            self.costs.setdefault(name, []).append(float(v))
        self.group.append(group)


def _add_reason(group: dict, reason: str) -> None:
    reasons = [r for r in group["reason"].split("; ") if r != SINGLE]
    group["reason"] = "; ".join(dict.fromkeys(reasons + [reason]))


def _reader_id(arch: Architecture) -> tuple:
    """What a read depends on besides memory: the retriever and its own knob values."""
    return arch.retrieve, tuple(kv for kv in arch.params if kv[0].startswith("retrieve."))


def _retriever(arch: Architecture, space: "ArchitectureSpace", resources: "Resources") -> Any:
    """``arch``'s retriever configured with its knobs (as `MemoryProgram` would build it)."""
    from memarch.pipeline.program import with_params

    config = with_params({}, arch, space).get("retriever", {})
    return REGISTRY.get("retriever", arch.retrieve).cls(resources, **config)


def evaluate_unit(unit: Unit, bench: "Benchmark", space: "ArchitectureSpace", resources: "Resources", *,
                  context_budget: int, top_k: int, query_ids: list[str], metrics: list[str]) -> UnitRows:
    """Evaluate every architecture of ``unit`` on all questions of ``bench`` (one stream)."""
    rows = UnitRows()
    started = time.perf_counter()
    settings = EvaluationSettings(context_budget=context_budget, top_k=top_k, metric=metrics[0])
    if unit.encoders is None:
        result = run_stream(None, bench, settings, attribute_all=True)[0]
        rows.add("none", result, query_ids, metrics, {"memory_items": 0, "memory_words": 0, "memory_words_max_ns": 0, "write_s": 0,
                                                         **read_costs([]), "embeddings_computed": 0}, 0)
        rows.groups.append({"id": 0, "members": ["none"], "reason": SINGLE})
        rows.stats = {"wall_s": time.perf_counter() - started}
        return rows
    # One write pass per manager and write-side knobs (encoders', store's, manager's): only the
    # retriever's knobs are read-side.
    by_manager: dict[tuple, list[Architecture]] = {}
    for a in unit.architectures:
        write_side = tuple((k, v) for k, v in a.params if not k.startswith("retrieve."))
        by_manager.setdefault((a.manage, write_side), []).append(a)
    order = {n: i for i, n in enumerate(space.retrievers)}
    managers = sorted(by_manager, key=lambda m: (-len(by_manager[m]), space.managers.index(m[0]), m[1]))
    # Digests only pay when another manager's pass could reuse the reads.
    memo: dict | None = {} if len(managers) > 1 else None
    # A reused read is scored as it was the first time: its scores are kept beside the reads.
    score_memo: dict | None = {} if memo is not None else None
    pass_group: dict[int, int] = {}
    stats = {"architectures": len(unit.architectures), "write_passes": 0, "write_passes_saved": 0,
             "reads": 0, "reads_reused": 0, "architectures_fully_reused": 0, "digest_s": 0.0}
    for number, manager in enumerate(managers):
        # One reader per (retriever, knob levels): reads never change memory, so a landscape built
        # with levers (levers.py) reads every setting of a retriever from the same write pass.
        archs = sorted(by_manager[manager], key=lambda a: (order[a.retrieve], a.key()))
        program = MemoryProgram(archs[0], resources=resources, top_k=top_k, context_budget=context_budget)
        p = _Pass(number, program, memo)
        readers = [p.reader(program.retriever, _reader_id(archs[0]))] + [
            p.reader(_retriever(a, space, resources), _reader_id(a)) for a in archs[1:]]
        embedded = getattr(resources.embedder, "computed", 0)
        results = run_stream(program, bench, settings, readers=readers, attribute_all=True,
                              on_read_point=p.on_read_point, score_memo=score_memo)
        computed = sum(r.computed for r in readers)
        members = [a.key() for a in archs]
        if memo is not None and computed == 0 and len(p.sources) == 1:
            group = pass_group[next(iter(p.sources))]
            rows.groups[group]["members"] += members
            _add_reason(rows.groups[group], SHARED_MEMORY)
            stats["architectures_fully_reused"] += len(archs)
        else:
            group = len(rows.groups)
            rows.groups.append({"id": group, "members": members, "reason": SINGLE})
            if len(archs) > 1:
                _add_reason(rows.groups[group], SHARED_WRITE)
        pass_group[number] = group
        reused = sum(r.reused for r in readers)
        if reused:
            rows.groups[group].setdefault("reads_reused", 0)
            rows.groups[group]["reads_reused"] += reused
        store = program.store
        memory = memory_costs(store)[0]
        embeddings = getattr(resources.embedder, "computed", 0) - embedded
        for arch, reader, result in zip(archs, readers, results):
            rows.add(arch.key(), result, query_ids, metrics,
                     {**memory, "write_s": result.cost.get("write_s", 0.0), **read_costs(reader.latency),
                      "embeddings_computed": embeddings}, group)
        stats["write_passes"] += 1
        stats["write_passes_saved"] += len(archs) - 1
        stats["reads"] += computed + reused
        stats["reads_reused"] += reused
        stats["digest_s"] += p.digest_s
    stats["wall_s"] = time.perf_counter() - started
    rows.stats = stats
    return rows

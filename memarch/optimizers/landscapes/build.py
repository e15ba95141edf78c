"""Building a landscape: plan the architectures (the whole LM-free space or a seeded sample, every
preset and the no-memory row) in units of one (encoders, store), evaluate each unit once with
shared passes, persist each finished unit as a part (a killed build resumes), and join the parts.
``shard=(i, n)`` builds only this process's units, balanced by expected cost."""
from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memarch.pipeline.retrieval import DEFAULT_TOP_K
from memarch.benchmarks.base import SPLITS, STREAM, Benchmark
from memarch.optimizers.landscapes.table import EVIDENCE_SEP, FORMAT, Landscape
from memarch.optimizers.landscapes.join import join, settings
from memarch.optimizers.landscapes.unit import SHARED_MEMORY, SHARED_WRITE, Unit, UnitRows, evaluate_unit
from memarch.errors import MemarchError
from memarch.benchmarks.evaluation.settings import EvaluationSettings, default_top_k
from memarch.benchmarks.evaluation.stream import run_stream
from memarch.benchmarks.metrics.registry import METRICS
from memarch.pipeline.resources import Resources
from memarch.pipeline.space import ArchitectureSpace
from memarch.pipeline.files import file_sha256
from memarch.pipeline.retrieval import DEFAULT_CONTEXT_BUDGET

SHARING_RULES = {
    SHARED_WRITE: "reads do not change memory, so every retriever reads one write pass",
    SHARED_MEMORY: "a read is reused from another manager's pass where both memories have the same "
                   "digest (records incl. inactive ones with lineage and usage, the store's index and "
                   "graph, the write trace) at that read point",
    "stores": "never merged: each store searches its own way (FAISS, NumPy, graph), and a store's "
              "class is part of the digest",
}
COST_NOTES = ("write_s is the manager's own write pass; read_s, read_p50_ms and read_p95_ms are "
              "retrieval times per question (a reused read reports the time of the pass that made it); "
              "embeddings_computed counts the whole write pass shared by a group; memory_* at the end")


@dataclass
class BuildPlan:
    """What a build evaluates and how; identical in every shard and every resumed run.

    Example::

        plan = plan_build(get_benchmark("generated", conversations=2), sample=20)
        build(plan, "small.npz", shard=(1, 2))      # this process's half of the units
    """

    bench: Benchmark
    resources: Resources
    space: ArchitectureSpace
    context_budget: int
    top_k: int
    units: list[Unit]
    queries: dict[str, np.ndarray]
    metrics: list[str]
    meta: dict[str, Any]

    @property
    def query_ids(self) -> list[str]:
        return self.queries["query_id"].tolist()


def data_fingerprint(path: Any) -> dict[str, Any] | None:
    """sha256 of the data file, or of every file under the data directory (sorted by path)."""
    if path is None:
        return None
    path = Path(path)
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    if path.is_file():
        return {"path": str(path), "files": 1, "sha256": file_sha256(path)}
    h = hashlib.sha256()
    for p in files:
        h.update(f"{p.relative_to(path)}\x1f{file_sha256(p)}\n".encode())
    return {"path": str(path), "files": len(files), "sha256": h.hexdigest()}


def _commit() -> str | None:
    """The memarch checkout's commit, ``-dirty`` when it has uncommitted changes."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0 or not head.stdout.strip():
        return None
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def _architectures(space: ArchitectureSpace, sample: int | None, seed: int, chosen: list | None,
                   with_presets: bool) -> tuple[list, dict[str, str], int]:
    from memarch.pipeline.presets import presets_for

    if chosen is None:
        every = [a.canonical() for a in space.enumerate()]
        chosen = every if sample is None or sample >= len(every) else random.Random(seed).sample(every, sample)
    else:
        chosen = [space.validate(a.canonical()) for a in chosen]
    presets = {name: a.key() for name, a in presets_for(space).items()}
    keys = {a.key(): a for a in chosen}
    added = 0
    for arch in presets_for(space).values() if with_presets else ():
        if arch.key() not in keys:
            keys[arch.key()] = arch
            added += 1
    return [keys[k] for k in sorted(keys)], presets, added


def _units(archs: list) -> list[Unit]:
    units: dict[tuple, Unit] = {}
    for a in archs:
        units.setdefault((a.encode, a.store), Unit(a.encode, a.store)).architectures.append(a)
    return [Unit(None, None)] + [units[k] for k in sorted(units, key=lambda k: ("+".join(k[0]), k[1]))]


def _query_table(bench: Benchmark, view: Benchmark, resources: Resources, budget: int, top_k: int
                 ) -> tuple[dict[str, np.ndarray], list[str]]:
    """The scored questions in stream order, their split (the benchmark's own rule) and text; and
    the LM-free metrics evaluate() gives them (read off a no-memory run)."""
    where: dict[str, tuple] = {}
    for d in bench.dialogues:
        for q in d.questions:
            if q.id in where:
                raise MemarchError(f"{bench.name}: question id {q.id!r} is not unique; a landscape needs unique ids")
            where[q.id] = (d.namespace, q)
    split_of: dict[str, int] = {}
    for code, name in enumerate(SPLITS):
        for d in bench.split(name).dialogues:
            for q in d.questions:
                split_of[q.id] = code
    baseline = run_stream(None, view, EvaluationSettings(context_budget=budget, top_k=top_k, metric="answer_recall"),
                          attribute_all=True)[0]
    outs = baseline.outcomes
    metrics = [o for o in METRICS if any(out.evidence.get(o) is not None for out in outs)]
    qs = [where[o.query_id][1] for o in outs]
    table = {
        "query_id": np.array([q.id for q in qs], dtype=str),
        "query_split": np.array([split_of.get(q.id, -1) for q in qs], dtype=np.int8),
        "query_category": np.array([q.category for q in qs], dtype=str),
        "question": np.array([q.text for q in qs], dtype=str),
        "gold": np.array([str(q.answer) for q in qs], dtype=str),
        "query_evidence": np.array([EVIDENCE_SEP.join(q.evidence) for q in qs], dtype=str),
    }
    for o in metrics:
        table[f"has_{o}"] = np.array([out.evidence.get(o) is not None for out in outs], dtype=bool)
    return table, metrics


def plan_build(bench: Benchmark, *, resources: Resources | None = None, context_budget: int = DEFAULT_CONTEXT_BUDGET,
               sample: int | None = None, seed: int = 0, limit: int | None = None,
               knobs: dict[str, Any] | None = None, architectures: list | None = None,
               presets: bool = True, levers: dict[str, Any] | None = None, split_limit: int | None = None,
               exclude: tuple[str, ...] = ()) -> BuildPlan:
    """Everything a build needs before it evaluates: architectures, units, question table, meta.

    Example::

        plan = plan_build(get_benchmark("generated", conversations=2), sample=20)
        len(plan.units), plan.metrics

    Args:
        bench: a stream benchmark (all its questions are asked; each keeps its split label).
        resources: embedder and caches (no LM: landscapes are LM-free).
        context_budget: context budget B; top_k is evaluate()'s default B / 10 (at least 4).
        sample: a seeded sample of N architectures of the LM-free space instead of all of them.
        seed: the sample's seed.
        limit: only the first N questions in stream order.
        knobs: the benchmark's knobs, recorded in the meta.
        architectures: exactly these architectures instead of the space or a sample.
        presets: add every valid preset (the CLI always does).
        levers: retriever knob levels (levers.py): every architecture is also read at each
            combination, ``{"retrieve.pack": (0, 1)}`` doubles the rows (and the reads, not the writes).
        split_limit: only the first N questions of each split (a fixed subset of a costly benchmark:
            LongMemEval's instances are whole haystacks).
        exclude: modules left out of the space (``("entity",)``; `ArchitectureSpace`'s ``exclude``):
            neither sampled nor added as presets; replays search the same space.
    """
    if bench.protocol != STREAM:
        raise MemarchError(f"{bench.name}: landscapes need a conversation (stream) benchmark")
    resources = resources or Resources()
    if resources.lm is not None:
        raise MemarchError("landscapes are LM-free: build them without an LM")
    top_k = default_top_k(context_budget) if context_budget else DEFAULT_TOP_K
    family = bench.family
    space = ArchitectureSpace(family, lm_available=False, exclude=exclude)
    archs, preset_keys, added = _architectures(space, sample, seed, architectures, presets)
    categorical = len(archs)
    if levers:
        from memarch.optimizers.landscapes.levers import grid_size, with_levers

        archs = sorted(with_levers(archs, levers, space), key=lambda a: a.key())
    view = bench.limit(limit).limit_per_split(split_limit)
    queries, metrics = _query_table(bench, view, resources, context_budget, top_k)
    from memarch._version import __version__

    meta = {
        "format": FORMAT, "benchmark": bench.name, "knobs": dict(knobs or {}),
        "data": data_fingerprint(bench.path), "family": family,
        "split": {"seed": bench.seed, "split_by": bench.split_by, "fractions": bench.fractions},
        "context_budget": context_budget, "top_k": top_k, "limit": limit,
        "embedder": resources.embedder.model_id, "metrics": metrics,
        "space": {"encoders": space.encoders, "stores": space.stores, "retrievers": space.retrievers,
                  "managers": space.managers, "valid": space.count_valid(), "lm_available": False},
        "sample": {"full": architectures is None and (sample is None or sample >= space.count_valid()),
                   "seed": seed if sample and architectures is None else None,
                   "requested": len(architectures) if architectures is not None else sample, "presets_added": added, "architectures": categorical,
                   "space": space.count_valid()},
        "presets": preset_keys, "planned": ["none"] + [a.key() for a in archs],
        **({"split_limit": split_limit} if split_limit else {}),
        **({"exclude": list(space.exclude)} if space.exclude else {}),
        **({"levers": {"levels": {k: list(v) for k, v in levers.items()}, "grid": grid_size(levers),
                       "categorical": categorical, "rows": len(archs)}} if levers else {}),
        "queries": {s: int((queries["query_split"] == i).sum()) for i, s in enumerate(SPLITS)},
        "memarch": __version__, "sharing_rules": SHARING_RULES, "cost_notes": COST_NOTES,
    }
    # As it reads back from a file (tuples become lists), so a resumed build compares like with like.
    meta = json.loads(json.dumps(meta))
    return BuildPlan(view, resources, space, context_budget, top_k, _units(archs), queries, metrics, meta)


def assign_shards(units: list[Unit], n: int) -> list[int]:
    """Shard (0-based) of each unit: the costliest first, each to the least-loaded shard."""
    load = [0.0] * n
    out = [0] * len(units)
    for j in sorted(range(len(units)), key=lambda j: (-units[j].expected_cost(), units[j].id)):
        s = min(range(n), key=lambda i: (load[i], i))
        out[j] = s
        load[s] += units[j].expected_cost()
    return out


def _part_path(parts: Path, unit: Unit) -> Path:
    slug = unit.id.replace("|", "-").replace("+", "_")
    return parts / f"{slug}-{hashlib.sha1(unit.id.encode()).hexdigest()[:8]}.npz"


def _part(plan: BuildPlan, unit: Unit, rows: UnitRows, commit: str | None) -> Landscape:
    arrays = dict(plan.queries)
    arrays["keys"] = np.array(rows.keys, dtype=str)
    arrays["group"] = np.array(rows.group, dtype=np.int32)
    for o in plan.metrics:
        arrays[f"score_{o}"] = np.stack(rows.scores[o])
        if not np.array_equal(rows.has[o], plan.queries[f"has_{o}"]):
            raise MemarchError(f"unit {unit.id}: which questions have a value of {o} differs from the "
                               "no-memory run; a landscape cannot store it")
    arrays["loss_stage"] = np.stack(rows.loss_stage)
    for name, vals in rows.costs.items():
        arrays[f"cost_{name}"] = np.array(vals, dtype=np.float32)
    groups = [{**g, "unit": unit.id} for g in rows.groups]
    return Landscape({**plan.meta, "groups": groups,
                      "build": {"unit": unit.id, "wall_s": round(rows.stats.get("wall_s", 0.0), 3),
                                "sharing": rows.stats, "commit": commit}}, arrays)


def _resume(path: Path, plan: BuildPlan) -> bool:
    if not path.exists():
        return False
    part = Landscape.load(path)
    if settings(part.meta) != settings(plan.meta):
        raise MemarchError(f"{path.parent}: parts of a build with other settings; delete the directory "
                           "or choose another --out")
    return True


def build(plan: BuildPlan, out: str | Path, *, shard: tuple[int, int] | None = None,
          progress: bool = True) -> Landscape:
    """Evaluate the plan's units (this shard's, 1-based ``(i, n)``) into ``out``; resumable.

    Finished units are kept as parts under ``<out>.parts/`` until the landscape is written.
    """
    from tqdm import tqdm

    out = Path(out)
    parts_dir = out.parent / f"{out.name}.parts"
    label = f"{shard[0]}/{shard[1]}" if shard else None
    if out.exists() and not parts_dir.exists():
        done = Landscape.load(out)
        if settings(done.meta) != settings(plan.meta) or done.meta.get("build", {}).get("shard") != label:
            raise MemarchError(f"{out}: exists and was built with other settings; remove it or choose another --out")
        return done  # built already: nothing to do
    parts_dir.mkdir(parents=True, exist_ok=True)
    for stale in parts_dir.glob(".*.tmp"):  # a write cut short by a kill
        stale.unlink(missing_ok=True)
    units = plan.units
    if shard is not None:
        i, n = shard
        owner = assign_shards(units, n)
        units = [u for u, s in zip(units, owner) if s == i - 1]
    started = time.time()
    commit = _commit()
    todo = [u for u in units if not _resume(_part_path(parts_dir, u), plan)]
    bar = tqdm(total=len(units), initial=len(units) - len(todo), unit="unit", file=sys.stderr,
               disable=not progress, desc=f"landscape {plan.bench.name}", dynamic_ncols=True)
    embedder = plan.resources.embedder
    counted = (getattr(embedder, "computed", 0), getattr(embedder, "requested", 0))
    for unit in todo:
        asked = getattr(embedder, "requested", 0) - counted[1]
        new = getattr(embedder, "computed", 0) - counted[0]
        bar.set_postfix_str(unit.id[:40] + (f", embeddings {1 - new / asked:.0%} cached ({new} new)" if asked else ""))
        rows = evaluate_unit(unit, plan.bench, plan.space, plan.resources, context_budget=plan.context_budget,
                             top_k=plan.top_k, query_ids=plan.query_ids, metrics=plan.metrics)
        _part(plan, unit, rows, commit).save(_part_path(parts_dir, unit))
        bar.update(1)
    bar.close()
    parts = [Landscape.load(_part_path(parts_dir, u)) for u in units]
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    land = join(parts, build={"wall_s": round(time.time() - started, 3), "cpus": cpus, "commit": commit,
                              "shard": label,
                              "units": len(units), "units_resumed": len(units) - len(todo),
                              "started": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(started))})
    land.save(out)
    for u in units:
        _part_path(parts_dir, u).unlink(missing_ok=True)
    try:
        parts_dir.rmdir()
    except OSError:  # another shard's parts are still there
        pass
    return Landscape.load(out)


def sharing_summary(land: Landscape) -> str:
    """One paragraph: evaluations saved by sharing the write pass and by reusing reads."""
    s = land.meta.get("build", {}).get("sharing", {})
    archs = int(s.get("architectures", 0))
    reads = int(s.get("reads", 0))
    return (f"{archs} architectures in {int(s.get('write_passes', 0))} write passes: "
            f"{int(s.get('write_passes_saved', 0))} write passes saved by sharing the write across retrievers; "
            f"{int(s.get('reads_reused', 0))} of {reads} reads reused where managers left identical memory "
            f"({int(s.get('architectures_fully_reused', 0))} architectures wholly), "
            f"digests {s.get('digest_s', 0.0):.1f} s")


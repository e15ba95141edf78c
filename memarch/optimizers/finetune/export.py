"""Fine-tuning export: run a program over a benchmark's search split, record its memory modules'
calls, and keep as chat-format pairs only the calls whose written items were retrieved for queries
that succeeded (provenance: item -> the queries that read it). Never from the test split."""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memarch.errors import MemarchError
from memarch.optimizers.finetune.format import chat_line
from memarch.optimizers.finetune.labels import Pair
from memarch.optimizers.finetune.recorder import CallRecorder

SPLIT = "search"  # training data: the split the search itself read
# Lineage actions by which a stored item carries the content of others (their writers share its credit).
CARRIES = ("merged_from", "generalised_from", "revised", "rewritten")
NEVER_RETRIEVED = "never retrieved"
ONLY_FAILED = "retrieved only for failed queries"
UNSCORED_READ = "read not scored (a diagnostic read)"
BELOW_MIN = "below --min-score"


@dataclass
class FinetuneExport:
    """The pairs kept, with what was considered and why the rest were dropped.

    Example::

        export = export_finetune(program, "generated", min_score=0.5)
        export.write("memory.jsonl"); print("\\n".join(export.describe()))

    Args:
        lines: chat-format lines (``messages`` + ``metadata``), one per kept pair.
        considered: module calls seen.
        dropped: reason -> calls dropped for it.
        kept_by_module: module -> pairs kept.
        result: the evaluation of the search split that judged the provenance.
        unsupported: modules without a signature to export -> calls not considered.
    """

    lines: list[dict[str, Any]]
    considered: int
    dropped: Counter
    kept_by_module: Counter
    result: Any
    unsupported: dict[str, int] = field(default_factory=dict)

    def write(self, path: str | Path) -> Path:
        """One JSON object per line (atomic)."""
        from memarch.pipeline.files import atomic_write_text

        atomic_write_text(path, "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in self.lines))
        return Path(path)

    def describe(self) -> list[str]:
        r = self.result
        ok = sum(o.success for o in r.outcomes)
        lines = [f"{r.benchmark} [{SPLIT}]: {len(r.outcomes)} queries judged the provenance ({ok} succeeded; "
                 f"metric {r.metadata.get('metric')} {r.score:.4f})",
                 f"pairs considered {self.considered}, kept {len(self.lines)}, dropped {sum(self.dropped.values())}"]
        lines += [f"  dropped: {reason}: {n}" for reason, n in sorted(self.dropped.items(), key=lambda kv: -kv[1])]
        lines += [f"  kept: {module}: {n}" for module, n in sorted(self.kept_by_module.items())]
        lines += [f"  not exported: {module}: {n} calls made no signature call (LM-free path or fallback)"
                  for module, n in sorted(self.unsupported.items())]
        return lines


def export_finetune(program: Any, benchmark: Any, *, min_score: float | None = None, limit: int | None = None,
                    metric: str | None = None, adapter: str = "json", source: str = "") -> FinetuneExport:
    """Fine-tuning pairs of ``program``'s memory modules on ``benchmark``'s search split.

    Example::

        program = MemoryProgram(Architecture(("fact",), "vector", "hybrid", "lightweight"))
        export = export_finetune(program, "generated", min_score=0.5)

    A call is kept when at least one query that retrieved its items (or an item carrying them:
    a merge, a generalisation, a revision) succeeded, and the mean score of those queries (the
    pair's ``score``) is at least ``min_score``. Calls without a label (the LM-free turn encoder
    rewrites nothing), without items, or whose answer does not fit the signature are dropped,
    each counted under its reason.

    Args:
        program: a fresh `MemoryProgram` (no memory yet); its resources, top_k and budget are used.
        benchmark: a `Benchmark` or a name; only its ``search`` split is read.
        min_score: keep only pairs whose score is at least this (None: any successful provenance).
        limit: the first N questions (or tasks) of the split.
        metric: the per-query score (default: the benchmark's LM-free default).
        adapter: ``json`` (what memarch's modules call their LM with) or ``chat`` (DSPy's default).
        source: where the program came from (a study or a file), kept in the metadata.
    """
    from memarch.benchmarks.evaluation.evaluate import evaluate
    from memarch.benchmarks.evaluation.settings import EvaluationSettings

    if min_score is not None and not 0.0 <= min_score <= 1.0:
        raise MemarchError(f"min_score must be in [0, 1], not {min_score}")
    if any(program.store.count(ns, include_deleted=True) for ns in program.store.namespaces()):
        raise MemarchError("export needs a fresh program: its memory would mix with the search split's writes")
    with CallRecorder(program) as recorder:
        settings = EvaluationSettings(context_budget=program.context_budget, top_k=program.top_k, metric=metric)
        result = evaluate(program, benchmark, split=SPLIT, resources=program.resources, settings=settings,
                          limit=limit)
    if result.failed:
        raise MemarchError(f"the search-split run failed: {result.error}")
    readers = _readers(program.store, result.outcomes)
    meta = {"benchmark": result.benchmark, "split": SPLIT, "architecture": program.architecture.key(),
            "metric": result.metadata.get("metric"), "adapter": adapter, "source": source}
    lines, dropped, kept = [], Counter(), Counter()
    for pair in recorder.pairs:
        reason, line = _judge(pair, readers, result.outcomes, min_score, adapter, meta)
        if reason is None:
            lines.append(line)
            kept[pair.module] += 1
        else:
            dropped[reason] += 1
    return FinetuneExport(lines, len(recorder.pairs), dropped, kept, result, dict(recorder.unsupported))


def _readers(store: Any, outcomes: list[Any]) -> dict[str, set[int]]:
    """Item id -> indices of the outcomes whose read returned it or an item carrying it."""
    items = {it.id: it for ns in store.namespaces() for it in store.list(ns, include_deleted=True)}

    def carried(item_id: str) -> set[str]:
        seen, todo = set(), [item_id]
        while todo:
            i = todo.pop()
            if i in seen:
                continue
            seen.add(i)
            it = items.get(i)
            if it is not None:
                todo += [r for e in it.lineage if e.action in CARRIES for r in e.related]
        return seen

    readers: dict[str, set[int]] = defaultdict(set)
    for index, outcome in enumerate(outcomes):
        for rid in outcome.retrieved_ids:
            for origin in carried(rid):
                readers[origin].add(index)
    return readers


def _judge(pair: Pair, readers: dict[str, set[int]], outcomes: list[Any], min_score: float | None,
           adapter: str, meta: dict[str, Any]) -> tuple[str | None, dict | None]:
    """(None, the line) for a kept pair, else (the reason it was dropped, None)."""
    if pair.outputs is None:
        return (pair.no_label if pair.no_label == "wrote no items" else f"no label: {pair.no_label}"), None
    if pair.read is not None:  # a retriever's call: credited by the query its read served
        text, ids = pair.read
        read_by = [i for i, o in enumerate(outcomes) if o.retrieved_ids == ids
                   and text in (o.evidence.get("question"), o.evidence.get("task"))]
        if not read_by:
            return UNSCORED_READ, None
    else:
        read_by = sorted({i for item_id in pair.credited for i in readers.get(item_id, ())})
    if not read_by:
        return NEVER_RETRIEVED, None
    succeeded = sum(1 for i in read_by if outcomes[i].success)
    if not succeeded:
        return ONLY_FAILED, None
    score = sum(outcomes[i].score for i in read_by) / len(read_by)
    if min_score is not None and score < min_score:
        return BELOW_MIN, None
    try:
        line = chat_line(pair.predictor, pair.inputs, pair.outputs, adapter=adapter)
    except ValueError as exc:
        return f"label does not fit {pair.signature_name}: {str(exc)[:120]}", None
    line["metadata"] = {"module": pair.module, "signature": pair.signature_name, "episode": pair.episode_id,
                        "namespace": pair.namespace, "score": round(score, 6), "queries_succeeded": succeeded,
                        "queries_failed": len(read_by) - succeeded, "items": len(pair.credited),
                        "label": pair.label, **meta}
    return None, line

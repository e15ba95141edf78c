"""The texts a search on a conversation benchmark will embed, known before its first trial: every
question, and what each LM-free conversation encoder writes (at its default knobs) for every
session — split by split, in the order the run needs them (`memarch.pipeline.prefetch` embeds them
ahead of need)."""
from __future__ import annotations

from typing import Iterable

from memarch.benchmarks.base import Benchmark, TaskBenchmark
from memarch.benchmarks.evaluation.protocols import stream_schedule
from memarch.pipeline.registry import REGISTRY
from memarch.pipeline.resources import Resources


def texts_ahead(bench: Benchmark, splits: Iterable[str], *, limit: int | None = None) -> list[str]:
    """Questions and the LM-free encoders' item texts of each split's dialogues, each text once, in
    split order (an agent benchmark: none, its memory is written from episodes played live)."""
    if isinstance(bench, TaskBenchmark):
        return []
    resources = Resources()  # no LM: the LM-free paths, which is what an LM-free search writes
    encoders = [spec.cls(resources) for spec in REGISTRY.specs("encoder", "conversation") if not spec.needs_lm]
    out: dict[str, None] = {}
    for split in splits:
        view = bench.split(split).limit(limit)
        for dialogue in view.dialogues:
            out.update((q.text, None) for q in dialogue.questions)
            for session, _ in stream_schedule(dialogue):
                for encoder in encoders:
                    if encoder.applies_to(session):
                        out.update((item.text, None) for item in encoder.encode_free(session))
    return list(out)

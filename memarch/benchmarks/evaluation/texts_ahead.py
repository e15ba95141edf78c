"""The texts a search on a conversation benchmark will embed, known before its first trial: every
question, what each LM-free conversation encoder writes (at its default knobs) for every session,
and the sentences of those items (what the sentence packer embeds of an item it reads) — split by
split, in the order the run needs them (`memarch.pipeline.prefetch` embeds them ahead of need)."""
from __future__ import annotations

from typing import Iterable

from memarch.benchmarks.base import STREAM, Benchmark
from memarch.benchmarks.evaluation.protocols import stream_schedule
from memarch.modules.retrievers import split_sentences
from memarch.pipeline.program import MemoryProgram
from memarch.pipeline.registry import REGISTRY
from memarch.pipeline.resources import Resources


def texts_ahead(bench: Benchmark, splits: Iterable[str], *, limit: int | None = None) -> list[str]:
    """Questions and the LM-free encoders' item texts of each split's dialogues in split order, then
    the items' sentences; each text once (an agent benchmark: none, its memory is written from
    episodes played live)."""
    if bench.protocol != STREAM:  # no texts known ahead: episodes are played, not read from data
        return []
    resources = Resources()  # no LM: the LM-free paths, which is what an LM-free search writes
    encoders = [spec.cls(resources) for spec in REGISTRY.specs("encoder", "conversation") if not spec.needs_lm]
    out: dict[str, None] = {}
    items: list[str] = []
    for split in splits:  # every split's questions and items first: what every trial embeds ...
        for dialogue in bench.split(split).limit(limit).dialogues:
            out.update((q.text, None) for q in dialogue.questions)
            for session, _ in stream_schedule(dialogue):
                for encoder in encoders:
                    if encoder.applies_to(session):
                        written = [item.text for item in encoder.encode_free(session)]
                        out.update((text, None) for text in written)
                        items.extend(written)
    # ... then their sentences, which only a trial that packs sentences embeds
    out.update((sentence, None) for text in items for sentence in split_sentences(text))
    return list(out)


def program_texts(program: MemoryProgram, bench: Benchmark) -> list[str]:
    """What one evaluation of ``program`` on ``bench`` (a split's view) will embed, as far as it is
    known before the run: the questions and what the program's encoders write for every session it
    will write, each text once (a text a manager merges, or a sentence a packer cuts, is embedded
    when it is made). Encoders with an LM path are left out when the program has an LM: their
    output is the LM's, made during the write."""
    if bench.protocol != STREAM:
        return []
    lm = program.resources.lm is not None
    encoders = [enc for enc, name in zip(program.encoders, program.architecture.encode)
                if not (lm and REGISTRY.get("encoder", name).uses_lm)]
    out: dict[str, None] = {}
    for dialogue in bench.dialogues:
        out.update((q.text, None) for q in dialogue.questions)
        for session, _ in stream_schedule(dialogue):
            for encoder in encoders:
                out.update((item.text, None) for item in encoder.encode(session))
    return list(out)

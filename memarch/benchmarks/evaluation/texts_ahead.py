"""The texts a search on a conversation benchmark will embed, known before its first trial: every
question, what each LM-free conversation encoder writes (at its default knobs) for every session,
and the sentences of those items (what the sentence packer embeds of an item it reads) — split by
split, in the order the run needs them (`memarch.pipeline.prefetch` embeds them ahead of need)."""
from __future__ import annotations

import hashlib
from typing import Iterable

from memarch.benchmarks.base import STREAM, Benchmark
from memarch.benchmarks.evaluation.protocols import stream_schedule
from memarch.modules.retrievers import PACKING, split_sentences
from memarch.pipeline.cache import stable_hash
from memarch.pipeline.knobs import TOP_K
from memarch.pipeline.program import MemoryProgram
from memarch.pipeline.registry import REGISTRY
from memarch.pipeline.resources import Resources

# The most items one question's read can rank (top_k's and pack_pool's upper bounds): a dialogue
# whose questions cannot read more items than it holds (LongMemEval: one question, thousands of
# items) gets its sentences embedded when a packer reads them, not all of them ahead.
MAX_READ_ITEMS = int(TOP_K.high) * int(next(k.high for k in PACKING if k.name == "pack_pool"))


def texts_ahead(bench: Benchmark, splits: Iterable[str], *, limit: int | None = None,
                encoders: Iterable[str] | None = None) -> list[str]:
    """Questions and the LM-free encoders' item texts of each split's dialogues in split order, then
    the items' sentences where a dialogue's reads can reach every item (its questions x
    `MAX_READ_ITEMS` >= its items; else a packer embeds the few it reads when it reads them); each
    text once (an agent benchmark: none, its memory is written from episodes played live).
    ``encoders``: only these encoders' texts (the searched space's; default every LM-free one)."""
    if bench.protocol != STREAM:  # no texts known ahead: episodes are played, not read from data
        return []
    resources = Resources()  # no LM: the LM-free paths, which is what an LM-free search writes
    wanted = None if encoders is None else set(encoders)
    writers = [spec.cls(resources) for spec in REGISTRY.specs("encoder", "conversation")
               if not spec.needs_lm and (wanted is None or spec.name in wanted)]
    out: dict[str, None] = {}
    items: list[str] = []
    for split in splits:  # every split's questions and items first: what every trial embeds ...
        for dialogue in bench.split(split).limit(limit).dialogues:
            out.update((q.text, None) for q in dialogue.questions)
            held: list[str] = []
            for session, _ in stream_schedule(dialogue):
                for encoder in writers:
                    if encoder.applies_to(session):
                        written = [item.text for item in encoder.encode_free(session)]
                        out.update((text, None) for text in written)
                        held.extend(written)
            if len(dialogue.questions) * MAX_READ_ITEMS >= len(held):
                items.extend(held)
    # ... then their sentences, which only a trial that packs sentences embeds
    out.update((sentence, None) for text in items for sentence in split_sentences(text))
    return list(out)


def _listed_encoders(program: MemoryProgram) -> list:
    """The encoders whose items `program_texts` lists: all, less those with an LM path when the
    program has an LM (their output is the LM's, made during the write)."""
    lm = program.resources.lm is not None
    return [enc for enc, name in zip(program.encoders, program.architecture.encode)
            if not (lm and REGISTRY.get("encoder", name).uses_lm)]


def program_texts(program: MemoryProgram, bench: Benchmark) -> list[str]:
    """What one evaluation of ``program`` on ``bench`` (a split's view) will embed, as far as it is
    known before the run: the questions and what the program's encoders write for every session it
    will write, each text once (a text a manager merges, or a sentence a packer cuts, is embedded
    when it is made). Encoders with an LM path are left out when the program has an LM: their
    output is the LM's, made during the write."""
    if bench.protocol != STREAM:
        return []
    encoders = _listed_encoders(program)
    out: dict[str, None] = {}
    for dialogue in bench.dialogues:
        out.update((q.text, None) for q in dialogue.questions)
        for session, _ in stream_schedule(dialogue):
            for encoder in encoders:
                out.update((item.text, None) for item in encoder.encode(session))
    return list(out)


def program_fingerprint(program: MemoryProgram, bench: Benchmark) -> str:
    """A name for `program_texts` ``(program, bench)`` found without listing it (which decodes every
    session's items: a sixth of a warm LongMemEval evaluate): memarch's version, the questions, and
    per session the content hash each listed encoder's cache key holds, beside each encoder's name,
    knobs, prompts and LM (the embedder is the mark's: `embed_ahead.known`). Equal fingerprints list equal texts while the encoders'
    code is the same (a changed encoder under one version at worst embeds in the run what it
    misses); "" for a benchmark with no texts known ahead."""
    if bench.protocol != STREAM:
        return ""
    from memarch._version import __version__

    encoders = _listed_encoders(program)
    lm_id = program.resources.lm_id
    digest = hashlib.sha256(stable_hash(
        "program_texts", __version__, [(enc.name, enc.config, enc.instructions(), lm_id) for enc in encoders]).encode())
    for dialogue in bench.dialogues:
        for q in dialogue.questions:
            digest.update(q.text.encode("utf-8", "surrogatepass") + b"\x1f")
        for session, _ in stream_schedule(dialogue):
            digest.update(session.content_hash().encode() + b"\x1e")
    return digest.hexdigest()

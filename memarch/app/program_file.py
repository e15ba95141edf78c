"""The program behind a `Memory`: read from a saved program or a bare architecture file, built
with its store's change log on, so that a write persists exactly the items it touched."""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from memarch.errors import DataError, MemarchError
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.files import read_json
from memarch.pipeline.resources import Resources

log = logging.getLogger(__name__)


def read_program(program: Any, resources: Resources | None) -> tuple[dict, str, Resources]:
    """(saved-program dict without its memory bank, a name for messages, resources).

    ``program``: a path to a saved program or an architecture JSON, a `MemoryProgram`, or an
    `Architecture`. Resources default to the program's embedder (``hash`` or a model), no LM, and
    no encoder-output cache (it would keep deleted users' messages on disk).
    """
    from memarch.pipeline.program import FORMAT, MemoryProgram

    if isinstance(program, MemoryProgram):
        return program.to_dict(include_memory=False), "program", resources or program.resources
    if isinstance(program, Architecture):
        built = MemoryProgram(program, resources=resources or Resources(use_encoder_cache=False))
        return built.to_dict(include_memory=False), program.key(), built.resources
    if not isinstance(program, (str, Path)):
        raise MemarchError(f"program: expected a file path, an Architecture or a MemoryProgram, "
                           f"got {type(program).__name__}")
    source = str(program)
    data = read_json(program, what="saved memarch program or architecture JSON")
    if isinstance(data, dict) and data.get("format") == FORMAT:
        bank = data.get("memory") or {}
        n_bank = sum(len(v) for v in (bank.get("namespaces") or {}).values()) if isinstance(bank, dict) else 0
        if n_bank:
            # A compiled program's bank is the benchmark's memory, not the app's.
            log.warning("%s: its saved memory bank (%d items) is not used; the memory starts from "
                        "the state under its path", source, n_bank)
        data = {**data, "memory": None}
        return data, source, resources or _resources_for(data.get("embedder"))
    if isinstance(data, dict) and "encode" in data:
        try:
            arch = Architecture.from_dict(data)
            built = MemoryProgram(arch, resources=resources or Resources(use_encoder_cache=False))
        except MemarchError as exc:
            raise DataError(f"{source}: {exc}") from None
        return built.to_dict(include_memory=False), source, built.resources
    raise DataError(f"{source}: neither a saved memarch program (format {FORMAT!r}) nor an architecture "
                    "(an object with encode, store, retrieve, manage)")


def _resources_for(embedder: Any) -> Resources:
    from memarch.pipeline.embed import DEFAULT_MODEL, Embedder

    # No encoder-output cache: it is shared on disk, keyed by message content, and would keep a
    # user's messages after `Memory.delete` removed them (and it saves nothing on new messages).
    if embedder in (None, DEFAULT_MODEL):
        return Resources(use_encoder_cache=False)
    return Resources(embedder=Embedder(str(embedder)), use_encoder_cache=False)


def build_program(data: dict, resources: Resources, source: str) -> Any:
    """A fresh `MemoryProgram` from ``data``, its store logging its changes (`Store.log_changes`):
    a write commits exactly the items it touched."""
    from memarch.pipeline.program import MemoryProgram

    program = MemoryProgram.from_dict(data, resources=resources, source=source)
    program.store.log_changes()
    return program


def claim(db: Any, data: dict, source: str, architecture: Architecture) -> None:
    """The first program to use a memory's database ``db`` owns it: items written by another
    architecture would be read by the wrong retriever, so a different one (``data``, the program
    read from ``source``) is refused, and ``db`` closed."""
    want = json.loads(json.dumps({k: data.get(k) for k in ("architecture", "config", "embedder")}))
    with db.write():
        have = db.get_meta("program")
        if have is None:
            db.set_meta("program", want)
    if have is not None and have != want:
        db.close()
        raise DataError(f"{db.directory}: holds the memory of {Architecture.from_dict(have['architecture']).key()}"
                        f" (embedder {have.get('embedder')}), not of {source} "
                        f"({architecture.key()}, embedder {want.get('embedder')}); use another path")

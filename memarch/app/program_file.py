"""The program behind a `Memory`: read from a saved program or a bare architecture file, built
with its store instrumented so that a write persists exactly the items it touched."""
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


def build_program(data: dict, resources: Resources, source: str):
    """A fresh `MemoryProgram` from ``data`` and the `Touched` record of its store."""
    from memarch.pipeline.program import MemoryProgram

    program = MemoryProgram.from_dict(data, resources=resources, source=source)
    return program, Touched(program.store)


class Touched:
    """The (namespace, id) of every item a store's ``add`` / ``update`` / ``delete`` was called
    with since `clear`: what a write changed, so that only those rows are written to disk.

    Example::

        touched = Touched(program.store)
        program.write(episode)
        rows = touched.rows(program.store)    # [(namespace, id, item dict)]

    Args:
        store: the store to watch; its three write methods are wrapped on the instance.

    Managers change items in place and then call ``update`` (or ``add`` / ``delete``), the
    store contract every module keeps, so these three calls see every change.
    """

    def __init__(self, store: Any):
        self.keys: dict[tuple[str, str], None] = {}
        add, update, delete = store.add, store.update, store.delete

        def watched_add(items, vectors=None):
            items = list(items)
            self.keys.update(((it.namespace, it.id), None) for it in items)
            return add(items, vectors)

        def watched_update(item):
            self.keys[(item.namespace, item.id)] = None
            return update(item)

        def watched_delete(item_id, namespace="default", **kwargs):
            self.keys[(namespace, item_id)] = None
            return delete(item_id, namespace, **kwargs)

        store.add, store.update, store.delete = watched_add, watched_update, watched_delete

    def clear(self) -> None:
        self.keys = {}

    def rows(self, store: Any) -> list[tuple[str, str, dict]]:
        out = []
        for ns, item_id in self.keys:
            item = store.get(item_id, ns, include_deleted=True)
            if item is None:  # stores tombstone, never forget: a missing item is a bug to see
                raise MemarchError(f"store lost item {item_id!r} of {ns!r} during a write")
            out.append((ns, item_id, item.to_dict()))
        return out


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

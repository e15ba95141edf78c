"""`memarch memory import`: a file of conversations bulk-written into a `Memory` — JSONL sessions
or a LoCoMo file — resumable: each committed batch records how far the import got, in the same
transaction, so a rerun after a crash or Ctrl-C goes on from there and writes nothing twice."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from memarch.errors import DataError, MemarchError
from memarch.pipeline.files import file_sha256

FORMATS = ("jsonl", "locomo")


def read_sessions(source: str | Path, fmt: str) -> list[Any]:
    """The sessions of ``source`` in file order, as `Memory.add_many` takes them.

    ``jsonl``: one session per line, ``{"messages": [...] | "text", "user_id": ..., "timestamp": ...}``
    (``messages`` required; blank lines and lines starting with ``#`` skipped). ``locomo``: every
    session of every conversation, the conversation's sample id as the user, dated as in the file.
    """
    path = Path(source)
    if fmt not in FORMATS:
        raise MemarchError(f"format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    if fmt == "locomo":
        from memarch.benchmarks.locomo import LoCoMo

        return [ep for d in LoCoMo(path).dialogues for ep in d.sessions]
    out = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}:{n}: not JSON ({exc.msg})") from None
            if not isinstance(row, dict) or "messages" not in row:
                raise DataError(f"{path}:{n}: expected an object with 'messages' (and optional 'user_id', 'timestamp')")
            out.append(row)
    return out


def import_file(memory: Any, source: str | Path, fmt: str, *, user_id: str = "default", batch: int = 256,
                on_progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
    """Write ``source`` into ``memory``, skipping what an earlier run of the same file committed.

    Returns ``{"sessions", "skipped", "written", "items"}``. ``on_progress(done, total)`` after
    each commit (and once before the first, with what was skipped).
    """
    sessions = read_sessions(source, fmt)
    key = f"import:{fmt}:{file_sha256(Path(source))}"
    done = int(memory.import_progress(key))
    if done > len(sessions):
        raise DataError(f"{source}: the memory records {done} sessions imported from this file, "
                        f"which has {len(sessions)}")
    if on_progress is not None:
        on_progress(done, len(sessions))
    items = 0

    def progress(n: int) -> None:
        if on_progress is not None:
            on_progress(done + n, len(sessions))

    for kept in memory.add_many(sessions[done:], user_id=user_id, batch=batch, on_progress=progress,
                                resume_key=key, resume_from=done):
        items += len(kept)
    return {"sessions": len(sessions), "skipped": done, "written": len(sessions) - done, "items": items}

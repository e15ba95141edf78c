"""``memarch memory``: a served memory's state from the shell — ``import`` a file of conversations
into it (batched, resumable) and ``stats``. The memory is the directory a `memarch.Memory` (and
``memarch serve``) keeps its SQLite state in, or the ``postgresql://`` URL of a shared one."""
from __future__ import annotations

import json
import sys

HELP = "bulk-import conversations into a memory directory (resumable), or show its stats"


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    imp = sub.add_parser("import", help="write a JSONL or LoCoMo file into DIR through the program (batched; "
                                        "a rerun after a crash goes on where it stopped)",
                         description="Write a file of conversations into the memory under DIR through the "
                                     "program's encoders and manager, BATCH sessions per transaction. Each "
                                     "commit records how far the import got: rerunning the same command "
                                     "after a crash or Ctrl-C writes only what is missing.")
    imp.add_argument("dir", help="the memory's directory (memory.db; created if missing) or postgresql:// URL")
    imp.add_argument("--from", dest="fmt", required=True, choices=("jsonl", "locomo"),
                     help="jsonl: one session per line {messages, user_id, timestamp}; locomo: a LoCoMo file "
                          "(each conversation's sample id is its user)")
    imp.add_argument("--input", required=True, help="the file to import")
    imp.add_argument("--program", required=True, help="saved program (memarch compile --output) or architecture JSON; "
                                                       "must be the one that owns DIR")
    imp.add_argument("--user-id", default="default", help="user of sessions that do not name one (default 'default')")
    imp.add_argument("--batch", type=int, default=256, help="sessions per transaction (default 256)")
    imp.set_defaults(_action=_import)
    st = sub.add_parser("stats", help="users, items by status, episodes and bytes of the memory under DIR")
    st.add_argument("dir", help="the memory's directory or postgresql:// URL")
    st.set_defaults(_action=_stats)


def run(args) -> int:
    from memarch.errors import MemarchError

    action = getattr(args, "_action", None)
    if action is None:
        raise MemarchError("memory: name an action (import, stats)")
    return int(action(args) or 0)


def _import(args) -> int:
    import time

    from tqdm import tqdm

    from memarch import Memory
    from memarch.app.importing import import_file
    from memarch.errors import MemarchError

    if args.batch < 1:
        raise MemarchError(f"--batch must be positive, got {args.batch}")
    bar = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, initial=done, desc="import", unit="session", file=sys.stderr)
        else:
            bar.update(done - bar.n)

    start = time.perf_counter()
    with Memory.load(args.program, path=args.dir) as memory:
        try:
            out = import_file(memory, args.input, args.fmt, user_id=args.user_id, batch=args.batch,
                              on_progress=progress)
        finally:
            if bar is not None:
                bar.close()
        seconds = time.perf_counter() - start
        print(f"imported {out['written']} sessions ({out['items']} items kept) into {memory.path} in "
              f"{seconds:.1f} s; {out['skipped']} already there from an earlier run")
        print(json.dumps(memory.stats()["items"]))
    return 0


def _stats(args) -> int:
    """Read from the database alone: no program to load, nothing written."""
    from pathlib import Path

    from memarch.app.database import DB_FILE, open_database
    from memarch.app.postgres import is_url
    from memarch.errors import DataError
    from memarch.pipeline.architecture import Architecture

    url = is_url(args.dir) is not None
    if not url and not (Path(args.dir) / DB_FILE).is_file():
        raise DataError(f"{args.dir}: no memory here (no {DB_FILE})")
    db = open_database(args.dir)
    try:
        with db.read():
            counts, owner = db.stats(), db.get_meta("program") or {}
    finally:
        db.close()
    arch = owner.get("architecture")
    where = db.path if url else str(Path(args.dir).resolve())
    print(json.dumps({"path": where, "program": Architecture.from_dict(arch).key() if arch else None,
                      "embedder": owner.get("embedder"), **counts}, indent=2))
    return 0

"""Validation of a memarch data file (JSONL, docs/data.md): the JSON Schema shipped in
``schema/data.schema.json`` line by line, then the checks a schema cannot express (duplicate
ids, evidence naming no turn, an ``ask_after`` naming no session), each with its line number."""
from __future__ import annotations

import hashlib
import io
import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from memarch.errors import DataError

SCHEMA_PATH = Path(__file__).with_name("schema") / "data.schema.json"
FORMAT = "memarch-data/1"


@dataclass(frozen=True)
class Problem:
    """One problem of a data file, at its line.

    Example::

        str(Problem(3, "duplicate record id 'd1' (first on line 1)"))   # "line 3: error: duplicate ..."

    Args:
        line: 1-based line number in the file.
        message: what is wrong, with the path inside the record when there is one.
        severity: ``error`` (the file cannot be loaded as it is) or ``warning`` (it loads, but
            something is likely wrong; the benchmark reports the count).
    """

    line: int
    message: str
    severity: str = "error"

    def __str__(self) -> str:
        return f"line {self.line}: {self.severity}: {self.message}"

    def located(self, path: Any) -> str:
        """``FILE:LINE: severity: message``, the form editors and compilers use."""
        return f"{path}:{self.line}: {self.severity}: {self.message}"


@dataclass
class DataFile:
    """A read data file: its records with their line numbers and every problem found.

    Example::

        data = read_data("conversations.jsonl")
        [str(p) for p in data.problems]      # [] for a clean file
        data.kind                            # "dialogue" or "task"

    Args:
        path: the file read.
        records: ``(line number, record)`` of every dialogue or task line that passed the schema.
        meta: the ``meta`` header record, if the file has one.
        problems: errors and warnings, in line order.
    """

    path: Path
    records: list[tuple[int, dict]] = field(default_factory=list)
    meta: dict | None = None
    problems: list[Problem] = field(default_factory=list)

    @property
    def kind(self) -> str | None:
        kinds = {r["type"] for _, r in self.records}
        return kinds.pop() if len(kinds) == 1 else None

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]


@lru_cache(maxsize=1)
def schema() -> dict:
    with open(SCHEMA_PATH, encoding="utf-8") as fh:
        return json.load(fh)


def _inline(node: Any, defs: dict) -> Any:
    """``node`` with every local ``$ref`` replaced by its definition (the schema has no cycles)."""
    if isinstance(node, dict):
        if "$ref" in node:
            target = _inline(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
            return {**target, **{k: _inline(v, defs) for k, v in node.items() if k != "$ref"}}
        return {k: _inline(v, defs) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


@lru_cache(maxsize=1)
def _validator():
    from jsonschema import Draft202012Validator

    # Inlined: resolving $ref at every turn made validation ~50x slower (45 ms per small record).
    full = schema()
    return Draft202012Validator(_inline({k: v for k, v in full.items() if k != "$defs"}, full["$defs"]))


def _where(path) -> str:
    """``sessions[0].turns[2].speaker`` from a jsonschema error path."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _leaf_errors(error) -> list:
    """The most specific errors under a ``oneOf`` failure (what the user must fix): those deeper
    in the record than the failure itself, else the failure."""
    deeper = [e for e in error.context or () if len(e.absolute_path) > len(error.absolute_path)]
    return deeper or [error]


def schema_problems(record: Any, line: int) -> list[Problem]:
    out = []
    for err in sorted(_validator().iter_errors(record), key=lambda e: list(map(str, e.absolute_path))):
        for leaf in _leaf_errors(err):
            where = _where(leaf.absolute_path)
            out.append(Problem(line, f"{where}: {leaf.message}" if where else leaf.message))
    return list(dict.fromkeys(out))


def read_data(path: str | os.PathLike, *, reuse_checks: bool = False) -> DataFile:
    """Read and check a data file; raises DataError only when it cannot be read at all.

    ``reuse_checks``: skip the schema (the slow part, ~10 µs per JSON value) when a file with the
    same bytes passed it before under the same schema; the other checks always run.
    """
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: not found")
    if path.is_dir():
        raise DataError(f"{path}: is a directory (expected a .jsonl data file)")
    data = DataFile(path)
    try:
        blob = path.read_bytes()
    except OSError as exc:
        raise DataError(f"{path}: cannot be read ({exc.strerror})") from None
    try:
        text = blob.decode("utf-8-sig")  # a BOM some editors write is not an error
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    # Only \n, \r\n and \r end a line: str.splitlines would also split on U+2028, which JSON
    # strings may hold raw.
    lines = list(io.StringIO(text, newline=None))
    passed = _passed_marker(blob)
    trust_schema = reuse_checks and passed.exists()
    for lineno, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as exc:
            data.problems.append(Problem(lineno, f"not JSON ({exc.msg} at column {exc.colno})"))
            continue
        found = [] if trust_schema else schema_problems(record, lineno)
        if found:
            data.problems.extend(found)
            continue
        if record["type"] == "meta":
            if data.meta is not None or data.records:
                data.problems.append(Problem(lineno, "a meta record must be the first record, and only one"))
            data.meta = record
        else:
            data.records.append((lineno, record))
    if not data.records and not data.problems:
        data.problems.append(Problem(max(1, len(lines)), "no dialogue or task record"))
    schema_clean = not data.problems
    data.problems.extend(semantic_problems(data))
    data.problems.sort(key=lambda p: p.line)
    if schema_clean and not trust_schema:
        _remember_pass(passed)
    return data


def _passed_marker(blob: bytes) -> Path:
    """Where a pass of the schema over these bytes is remembered (the schema's bytes in the key)."""
    from memarch.pipeline.cache import default_cache_dir

    digest = hashlib.sha256(SCHEMA_PATH.read_bytes() + b"\0" + blob).hexdigest()
    return default_cache_dir() / "data_checks" / f"{digest}.passed"


def _remember_pass(marker: Path) -> None:
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    except OSError:  # a read-only cache costs the next load a full check, nothing else
        pass


def semantic_problems(data: DataFile) -> list[Problem]:
    """What the schema cannot say: one kind per file, unique ids, references that resolve."""
    out: list[Problem] = []
    kinds = {r["type"]: n for n, r in reversed(data.records)}
    if len(kinds) > 1:
        later = max(kinds.values())
        out.append(Problem(later, f"mixes dialogue and task records (first dialogue on line {kinds['dialogue']}, "
                                  f"first task on line {kinds['task']}); a file holds one kind"))
    seen: dict[str, dict[str, int]] = {"record": {}, "session": {}, "question": {}}

    def unique(kind: str, key: str, line: int) -> bool:
        if key in seen[kind]:
            out.append(Problem(line, f"duplicate {kind} id {key!r} (first on line {seen[kind][key]})"))
            return False
        seen[kind][key] = line
        return True

    for line, r in data.records:
        # a repeated record would repeat every id inside it: reported once, as itself
        if unique("record", r["id"], line) and r["type"] == "dialogue":
            out.extend(_dialogue_problems(r, line, unique))
    tasks = {r["id"]: r for _, r in data.records if r["type"] == "task"}
    for line, r in data.records:
        if r["type"] == "task":
            out.extend(_task_problems(r, line, tasks))
    return out


def _dialogue_problems(r: dict, line: int, unique) -> list[Problem]:
    out: list[Problem] = []
    turns: dict[str, int] = {}
    sessions = {s["id"]: i for i, s in enumerate(r["sessions"])}
    for i, s in enumerate(r["sessions"]):
        unique("session", s["id"], line)
        for j, t in enumerate(s["turns"]):
            if t["id"] in turns:
                out.append(Problem(line, f"sessions[{i}].turns[{j}].id: duplicate turn id {t['id']!r} in "
                                         f"dialogue {r['id']!r}"))
            turns.setdefault(t["id"], i)
    for k, q in enumerate(r["questions"]):
        unique("question", q["id"], line)
        missing = [e for e in q.get("evidence", []) if e not in turns]
        if missing:
            out.append(Problem(line, f"questions[{k}] ({q['id']}): evidence {', '.join(map(repr, missing))} "
                                     f"names no turn of dialogue {r['id']!r}", "warning"))
        after = q.get("ask_after")
        if isinstance(after, str) and after not in sessions:
            out.append(Problem(line, f"questions[{k}] ({q['id']}): ask_after {after!r} names no session of "
                                     f"dialogue {r['id']!r}"))
        elif isinstance(after, int) and not -1 <= after < len(r["sessions"]):
            out.append(Problem(line, f"questions[{k}] ({q['id']}): ask_after {after} is outside the "
                                     f"{len(r['sessions'])} session(s) (0-based)"))
    return out


def _task_problems(r: dict, line: int, tasks: dict[str, dict]) -> list[Problem]:
    out: list[Problem] = []
    steps: set[str] = set()
    for i, s in enumerate(r["steps"]):
        sid = s.get("id", f"s{i + 1}")
        if sid in steps:
            out.append(Problem(line, f"steps[{i}].id: duplicate step id {sid!r} in task {r['id']!r}"))
        steps.add(sid)
    ns = r.get("namespace", "default")
    for rid in r.get("relevant", []):
        other = tasks.get(rid)
        if other is None:
            out.append(Problem(line, f"relevant: {rid!r} names no task"))
        elif rid == r["id"]:
            out.append(Problem(line, "relevant: a task cannot be relevant to itself (it never retrieves its "
                                     "own memories)"))
        elif other.get("namespace", "default") != ns:
            out.append(Problem(line, f"relevant: task {rid!r} is in namespace "
                                     f"{other.get('namespace', 'default')!r}, not {ns!r}: never retrievable",
                               "warning"))
    if "relevant" not in r and not r.get("category"):
        out.append(Problem(line, f"task {r['id']!r} has neither 'relevant' nor a 'category': when deployed "
                                 "nothing counts as a relevant memory (it scores 0 for every architecture)",
                           "warning"))
    return out

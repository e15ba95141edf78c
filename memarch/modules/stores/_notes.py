"""Markdown notes of the `files` store: safe file names for keys and namespaces, and the note
format (a JSON header line, the body, an end marker) that tells a whole note from a torn one."""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from memarch.errors import DataError

NOTE_SUFFIX = ".md"
_HEAD = "<!-- memarch-note "
_TAIL = " -->"
END = "<!-- end of note -->"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_NAME = 80


def safe_name(key: str) -> str:
    """A file name for ``key`` that cannot leave its directory: unsafe characters become ``_``,
    leading dots go, and any change (or a long key) adds a hash of the original so distinct keys
    never share a file. ``"../etc/passwd"`` -> ``"etc_passwd-<hash>"``."""
    if not isinstance(key, str) or not key.strip():
        raise DataError(f"a note key must be a non-empty string, not {key!r}")
    name = _UNSAFE.sub("_", key.strip()).lstrip("._")[:MAX_NAME]
    if name != key or not name:
        digest = hashlib.sha1(key.encode("utf-8")).hexdigest()[:10]
        name = f"{name}-{digest}" if name else digest
    return name


def render(key: str, text: str, meta: dict) -> str:
    """The note file: header (key and metadata as JSON), ``# key``, the body, the end marker."""
    head = json.dumps({"key": key, **meta}, ensure_ascii=False, sort_keys=True)
    return f"{_HEAD}{head}{_TAIL}\n# {key}\n\n{text.rstrip()}\n{END}\n"


def parse(raw: str, where: str = "note") -> tuple[dict, str]:
    """(header, body) of a note file; a DataError names what is missing (a torn note)."""
    first, _, rest = raw.partition("\n")
    if not (first.startswith(_HEAD) and first.endswith(_TAIL)):
        raise DataError(f"{where}: no note header")
    try:
        head = json.loads(first[len(_HEAD):-len(_TAIL)])
    except json.JSONDecodeError as exc:
        raise DataError(f"{where}: malformed note header ({exc})") from None
    if not rest.endswith(END + "\n"):
        raise DataError(f"{where}: note is cut short (no end marker)")
    body = rest[: -len(END) - 1]
    title = f"# {head.get('key', '')}\n\n"
    return head, (body[len(title):] if body.startswith(title) else body).rstrip("\n")


def check_directory(root: str | Path) -> dict[str, list[str]]:
    """Every file under ``root`` sorted into ``notes`` (parse whole), ``torn`` (a ``*.md`` that does
    not parse) and ``leftovers`` (``.name.*.tmp`` of an interrupted atomic write: not a note)."""
    out: dict[str, list[str]] = {"notes": [], "torn": [], "leftovers": []}
    for path in sorted(Path(root).rglob("*")):
        if path.is_dir():
            continue
        if path.name.endswith(".tmp"):
            out["leftovers"].append(str(path))
        elif path.suffix == NOTE_SUFFIX:
            try:
                parse(path.read_text(encoding="utf-8"), str(path))
                out["notes"].append(str(path))
            except (DataError, UnicodeDecodeError) as exc:
                out["torn"].append(str(exc))
    return out

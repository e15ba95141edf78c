"""Atomic file writes: a saved file is either the old one or the new one, never half of each."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def _umask() -> int:
    """The process umask without changing it (os.umask would, racing other threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    path = Path(path)
    if path.is_dir():
        from memarch.errors import DataError

        raise DataError(f"{path}: is a directory (expected a file path to write)")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a saved file gets the usual mode
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any, *, indent: int | None = 1) -> None:
    atomic_write_text(path, json.dumps(obj, indent=indent, ensure_ascii=False, sort_keys=False))


def read_json(path: str | os.PathLike, *, what: str = "JSON file") -> Any:
    """Read JSON or raise a one-line MemarchError naming the path and what was expected."""
    from memarch.errors import DataError

    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: not found (expected a {what})")
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))  # -sig: a BOM from Windows editors is fine
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: malformed JSON ({exc.__class__.__name__}: {exc}); expected a {what}") from None
    except OSError as exc:  # a directory, no permission, ...
        raise DataError(f"{path}: cannot read ({exc.strerror or exc}); expected a {what}") from None


def writable_dir(path: str | os.PathLike, *, what: str = "--out") -> Path:
    """Create ``path`` (a directory) if needed and check that files can be written in it, so that a
    long run fails before it starts, not when it saves; one-line `MemarchError` otherwise."""
    from memarch.errors import MemarchError

    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MemarchError(f"{what} {path}: cannot create the directory ({exc.strerror or exc})") from None
    if not path.is_dir() or not os.access(path, os.W_OK | os.X_OK):
        raise MemarchError(f"{what} {path}: not a writable directory")
    return path


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 hex digest of a file's bytes, read in 1 MiB blocks."""
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def matches_digest(path: str | os.PathLike) -> bool:
    """The file exists and its bytes match the SHA-256 written beside it (``<name>.sha256``): a cached
    artefact that fails this (missing, truncated, altered, no digest) is rebuilt, never loaded."""
    path = Path(path)
    try:
        return path.is_file() and path.with_name(path.name + ".sha256").read_text().strip() == file_sha256(path)
    except OSError:
        return False


def private_directory(path: Path) -> None:
    """Create ``path`` (and missing parents) if missing; the folder itself ``0700``: a user's
    memories are no other local user's business. An existing folder keeps its mode."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir(mode=0o700, exist_ok=True)
        os.chmod(path, 0o700)  # mkdir's mode is masked by the umask


def private_file(path: Path) -> None:
    """Create an empty ``path`` with mode ``0600`` if it does not exist (an existing file keeps
    its mode); SQLite gives a database's -wal and -shm files the database file's mode."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass

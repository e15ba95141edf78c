"""A JSON list read element by element from a plain or gzip-compressed file, so that the first N
elements of a large file cost N elements, not the file (LongMemEval_S: 257 MB of JSON in 76 MB of
gzip; five instances read in well under a second, the whole file as fast as ``json.load``).

Example::

    read_json_list("longmemeval_s.json.gz", limit=5)   # the first 5 instances
    read_json_list("locomo10.json")                    # the whole list (or the value, if not a list)
"""
from __future__ import annotations

import gzip
import json
import os
import re
import zlib
from pathlib import Path
from typing import Any, TextIO

# Characters of decompressed text read at a time: large enough that an element (a LongMemEval
# instance is ~0.5 MB) rarely straddles two reads, small enough that a short read stays short.
CHUNK = 1 << 23
_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_NUMBER_START = frozenset("-0123456789")
_NUMBER_END = re.compile(r"[^-+.eE0-9]")


class _Stream:
    """The text of a file read ahead in chunks: ``buf`` from ``pos`` is what is left to parse."""

    def __init__(self, fh: TextIO):
        self.fh, self.buf, self.pos, self.consumed, self.eof = fh, "", 0, 0, False

    def more(self) -> bool:
        """Read another chunk (at least as much again as is left); False at the end of the file."""
        if self.eof:
            return False
        chunk = self.fh.read(max(CHUNK, len(self.buf) - self.pos))
        if not chunk:  # the buffer stays as it is: positions into it stay valid
            self.eof = True
            return False
        self.consumed += self.pos
        self.buf, self.pos = self.buf[self.pos:] + chunk, 0
        return True

    def peek(self) -> str:
        """The next character that is not white space ("" at the end of the file)."""
        while True:
            self.pos = _SPACE.match(self.buf, self.pos).end()
            if self.pos < len(self.buf) or not self.more():
                return self.buf[self.pos:self.pos + 1]

    def value(self) -> Any:
        """The next JSON value. A decode that fails is tried again with more text until the file
        ends; a number is decoded only once the text read shows where it ends (``1`` of ``1e+21``
        would decode)."""
        while True:
            if self.buf[self.pos:self.pos + 1] in _NUMBER_START and not _NUMBER_END.search(self.buf, self.pos):
                if self.more():
                    continue
            try:
                obj, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError:
                if self.more():
                    continue
                raise
            self.pos = end
            return obj

    def rest(self) -> str:
        return self.buf[self.pos:] + self.fh.read()


def _open(path: Path) -> TextIO:
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8-sig")
    return open(path, encoding="utf-8-sig")  # -sig: a BOM from Windows editors is fine


def read_json_list(path: str | os.PathLike, *, limit: int | None = None, what: str = "JSON list") -> Any:
    """The JSON value of ``path`` (``.gz``: gzip-compressed); when it is a list, only its first
    ``limit`` elements are parsed (and read: the rest of the file is never decompressed).

    A missing, unreadable or malformed file raises a one-line `DataError` naming the path, the
    character offset and, in a list, the element, and ``what`` was expected.
    """
    from memarch.errors import DataError

    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: not found (expected a {what})")
    items: list[Any] = []
    stream, in_list = None, False
    try:
        with _open(path) as fh:
            stream = _Stream(fh)
            if stream.peek() != "[":
                return json.loads(stream.rest())  # not a list: the caller says what it got
            stream.pos, in_list = stream.pos + 1, True
            while limit is None or len(items) < limit:
                c = stream.peek()
                if c == "]" or (items and c != ","):
                    break
                if items:
                    stream.pos += 1
                    stream.peek()
                items.append(stream.value())
            else:
                return items
            if stream.peek() != "]":
                raise json.JSONDecodeError("Expecting ',' delimiter or ']'", stream.buf, stream.pos)
            return items
    except json.JSONDecodeError as exc:
        at = (stream.consumed if stream is not None else 0) + exc.pos
        where = f" in element {len(items)}" if in_list else ""
        raise DataError(f"{path}: malformed JSON (JSONDecodeError: {exc.msg} at character {at}{where}); "
                        f"expected a {what}") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: malformed JSON (UnicodeDecodeError: {exc}); expected a {what}") from None
    except (OSError, EOFError, zlib.error) as exc:  # a directory, no permission, a bad or cut gzip stream
        reason = getattr(exc, "strerror", None) or exc
        raise DataError(f"{path}: cannot read ({exc.__class__.__name__}: {reason}); expected a {what}") from None

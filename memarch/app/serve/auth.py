"""Bearer tokens for ``memarch serve``: the token file, its permission checks, and which user ids a
token may act for.

The token file (UTF-8): one token per line, optionally followed by the user ids it may act for; a
token with no user ids may act for every user (and read ``/v1/stats``). Blank lines and lines
starting with ``#`` are ignored::

    # admin: every user
    3f9c0d6a0b7e4c1d9a8b7c6d5e4f3a2b
    # the support bot may only touch ana's and bob's memories, and those of "Ana Maria" and María
    b1e2c3d4e5f60718293a4b5c6d7e8f90 ana bob "Ana Maria" María

Fields are separated by spaces or tabs. A user id is written as it is, or, when it holds a space
or another blank character (or begins with ``"``), as a JSON string: ``"Ana Maria"``,
``"say \"hi\""``, ``"Ana\u00a0Maria"``. Only a field that begins with ``"`` is quoted (one
that holds a quote further in is taken as written); a quoted field ends at its closing quote, which
a blank or the end of the line must follow. Every id must pass the user-id rule the routes apply
(`memarch.app.messages.as_user`) and is compared as the code points written (never normalised).
A bad line is refused with one line naming the file and the line.

A token is at least 16 characters of printable ASCII without spaces (``openssl rand -hex 32``). The
file must be a regular file owned by the user running the server, with no permissions for group or
others (mode 0600 or stricter); anything else is refused with one line."""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from memarch.app.messages import as_user
from memarch.errors import MemarchError

MIN_TOKEN_CHARS = 16
BLANKS = " \t"  # what separates a line's fields
# A line's next field: a JSON string closed before a blank or the line's end, else a bare word.
_WORD = re.compile(r"[^ \t]+")
_FIELD = re.compile(r'[ \t]*(?:("(?:[^"\\]|\\.)*")(?=[ \t]|$)|([^ \t]+))')


@dataclass(frozen=True)
class Token:
    """One token of the file: its sha256 (the secret itself is not kept), the user ids it may act
    for (None: every user) and its line in the file (for logs, never the secret)."""

    digest: bytes
    users: frozenset[str] | None
    line: int

    def allows(self, user_id: str) -> bool:
        return self.users is None or user_id in self.users

    @property
    def scoped(self) -> bool:
        return self.users is not None


class TokenAuth:
    """The tokens a server accepts. `authenticate` compares the presented token with every known
    one in constant time (``hmac.compare_digest`` of sha256 digests, so neither the content nor the
    length of a secret leaks through timing, and all tokens are compared whatever matches)."""

    def __init__(self, tokens: list[Token]):
        if not tokens:
            raise MemarchError("no tokens given")
        self.tokens = list(tokens)

    @classmethod
    def from_secrets(cls, secrets: dict[str, list[str] | None]) -> "TokenAuth":
        """Tokens from ``{secret: user ids or None}`` (tests, embedding apps)."""
        return cls([_token(secret, users, i + 1) for i, (secret, users) in enumerate(secrets.items())])

    def authenticate(self, authorization: str | None) -> Token | None:
        """The token an ``Authorization: Bearer ...`` header value presents, or None."""
        if not authorization:
            return None
        scheme, _, secret = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            return None
        digest = hashlib.sha256(secret.strip().encode("utf-8", "surrogateescape")).digest()
        found = None
        for token in self.tokens:  # no early exit: the time does not say which line matched
            if hmac.compare_digest(token.digest, digest):
                found = token
        return found


def load_token_file(path: str | Path) -> TokenAuth:
    """Read and check a token file (format in the module docstring); one-line MemarchError if it
    is missing, not a regular file, not the user's own, readable by others, or malformed."""
    return TokenAuth(parse_tokens(read_token_file(path), where=f"token file {path}"))


def read_token_file(path: str | Path) -> str:
    """The text of a token file once it passed the ownership and permission checks."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise MemarchError(f"token file {path}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)  # the file opened, not whatever the name points to by now
        if not stat.S_ISREG(st.st_mode):
            raise MemarchError(f"token file {path}: not a regular file")
        if st.st_uid != os.getuid():
            raise MemarchError(f"token file {path}: owned by uid {st.st_uid}, not by this user (uid {os.getuid()})")
        mode = stat.S_IMODE(st.st_mode)
        if mode & 0o077:
            raise MemarchError(f"token file {path}: mode {mode:04o} lets group or others read it; "
                               f"chmod 600 {path}")
        raw = os.read(fd, 1 << 20)
    finally:
        os.close(fd)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise MemarchError(f"token file {path}: not UTF-8 text (byte {exc.start})") from None


def parse_tokens(text: str, *, where: str = "token file") -> list[Token]:
    """The tokens of a token file's text; duplicates, short tokens, user ids the user-id rule
    refuses, a bad quote and an empty file are refused (one line naming ``where`` and the line)."""
    tokens: list[Token] = []
    seen: set[bytes] = set()
    for n, line in enumerate(text.split("\n"), 1):
        line = line.removesuffix("\r").strip(BLANKS)
        if not line or line.startswith("#"):
            continue
        secret, ids = _fields(line, f"{where}:{n}")
        token = _token(secret, ids or None, n, where=where)
        if token.digest in seen:
            raise MemarchError(f"{where}:{n}: this token is already on an earlier line")
        seen.add(token.digest)
        tokens.append(token)
    if not tokens:
        raise MemarchError(f"{where}: no tokens (one per line: TOKEN [USER_ID ...])")
    return tokens


def _fields(line: str, where: str) -> tuple[str, list[str]]:
    """A line's token (its first field, as written) and its user ids (the quoting rule above)."""
    first = _WORD.match(line)
    secret, rest = first.group(), line[first.end():]
    ids: list[str] = []
    for m in _FIELD.finditer(rest):
        quoted, bare = m.groups()
        what = f"{where}: user id {len(ids) + 1}"
        if quoted is not None:
            try:
                ids.append(json.loads(quoted))
            except json.JSONDecodeError as exc:
                raise MemarchError(f"{what}: not a JSON string ({exc.msg}): {_shown(quoted)}") from None
        elif bare.startswith('"'):
            raise MemarchError(f"{what}: an unterminated quote: {_shown(bare)} (a quoted id is a JSON string, "
                               '"Ana Maria", whose closing quote a blank or the end of the line follows)')
        elif any(c.isspace() for c in bare):
            blank = next(c for c in bare if c.isspace())
            raise MemarchError(f"{what}: holds a blank character (U+{ord(blank):04X}): {_shown(bare)}; write "
                               'an id that holds one as a JSON string ("Ana\\u00a0Maria"), separate ids by spaces')
        else:
            ids.append(bare)
    return secret, ids


def _shown(field: str) -> str:
    return repr(field[:40]) + ("..." if len(field) > 40 else "")


def _token(secret: str, users: list[str] | None, line: int, *, where: str = "token") -> Token:
    if len(secret) < MIN_TOKEN_CHARS or not secret.isascii() or not secret.isprintable() or " " in secret:
        raise MemarchError(f"{where}:{line}: a token must be at least {MIN_TOKEN_CHARS} printable ASCII "
                           "characters without spaces (e.g. `openssl rand -hex 32`)")
    for user in users or ():
        try:
            as_user(user)  # the one user-id rule: a token may only name ids a route would accept
        except MemarchError as exc:
            raise MemarchError(f"{where}:{line}: {exc}") from None
    return Token(hashlib.sha256(secret.encode("ascii")).digest(),
                 None if users is None else frozenset(users), line)

"""Bearer tokens for ``memarch serve``: the token file, its permission checks, and which user ids a
token may act for.

The token file: one token per line, optionally followed by the user ids it may act for
(whitespace-separated); a token with no user ids may act for every user (and read ``/v1/stats``).
Blank lines and lines starting with ``#`` are ignored::

    # admin: every user
    3f9c0d6a0b7e4c1d9a8b7c6d5e4f3a2b
    # the support bot may only touch ana's and bob's memories
    b1e2c3d4e5f60718293a4b5c6d7e8f90 ana bob

A token is at least 16 characters of printable ASCII without spaces (``openssl rand -hex 32``). The
file must be a regular file owned by the user running the server, with no permissions for group or
others (mode 0600 or stricter); anything else is refused with one line."""
from __future__ import annotations

import hashlib
import hmac
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from memarch.errors import MemarchError

MIN_TOKEN_CHARS = 16


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
    return TokenAuth(parse_tokens(read_token_file(path), where=str(path)))


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
        return raw.decode("ascii")
    except UnicodeDecodeError:
        raise MemarchError(f"token file {path}: not ASCII text") from None


def parse_tokens(text: str, *, where: str = "token file") -> list[Token]:
    """The tokens of a token file's text; duplicates, short tokens and an empty file are refused."""
    tokens: list[Token] = []
    seen: set[bytes] = set()
    for n, line in enumerate(text.splitlines(), 1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        token = _token(words[0], words[1:] or None, n, where=where)
        if token.digest in seen:
            raise MemarchError(f"{where}:{n}: this token is already on an earlier line")
        seen.add(token.digest)
        tokens.append(token)
    if not tokens:
        raise MemarchError(f"{where}: no tokens (one per line: TOKEN [USER_ID ...])")
    return tokens


def _token(secret: str, users: list[str] | None, line: int, *, where: str = "token") -> Token:
    if len(secret) < MIN_TOKEN_CHARS or not secret.isascii() or not secret.isprintable() or " " in secret:
        raise MemarchError(f"{where}:{line}: a token must be at least {MIN_TOKEN_CHARS} printable ASCII "
                           "characters without spaces (e.g. `openssl rand -hex 32`)")
    return Token(hashlib.sha256(secret.encode("ascii")).digest(),
                 None if users is None else frozenset(users), line)

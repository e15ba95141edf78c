"""The server's log, bounded whatever clients send: a client's text (a path, a query) cut to
`LOG_TEXT_MAX` characters (`clip`), refusals and uvicorn's warnings about bad requests at most a
line a second of each kind (`Quiet`), and uvicorn's own loggers wrapped so that both hold for the
lines uvicorn writes (`BoundedLog`: its access log and its warnings)."""
from __future__ import annotations

import logging
import time
from typing import Any

LOG_TEXT_MAX = 200  # characters of one piece of a client's text in a log line


def clip(value: Any) -> Any:
    """``value`` cut to `LOG_TEXT_MAX` characters, with an ellipsis and its length, if it is longer
    text; anything else as it is."""
    if isinstance(value, str) and len(value) > LOG_TEXT_MAX:
        return f"{value[:LOG_TEXT_MAX]}... ({len(value)} characters)"
    return value


class Quiet:
    """At most one log line a second per kind, with how many were not logged since the last.

    Args:
        log: where a line goes unless `warn` names another logger.
    """

    def __init__(self, log: logging.Logger) -> None:
        self.log = log
        self.last: dict[str, float] = {}
        self.dropped: dict[str, int] = {}

    def warn(self, kind: str, message: str, logger: logging.Logger | None = None, **kwargs: Any) -> None:
        now = time.monotonic()
        if now - self.last.get(kind, -1e9) < 1.0:
            self.dropped[kind] = self.dropped.get(kind, 0) + 1
            return
        dropped = self.dropped.pop(kind, 0)
        self.last[kind] = now
        (logger or self.log).warning("%s%s", message, f" ({dropped} more not logged)" if dropped else "", **kwargs)


class BoundedLog(logging.LoggerAdapter):
    """A logger as uvicorn's HTTP protocol and its request cycle call it (``level``, ``log``,
    ``info``, ``warning``, ``error``): every argument of a line is `clip`ped, and every warning (an
    invalid request, an unsupported upgrade: one a client can send at will) goes through `Quiet`,
    a kind per message. Errors (a bug's traceback) are not rate-limited.

    Args:
        logger: uvicorn's logger (``uvicorn.error`` or ``uvicorn.access``).
        quiet: the server's rate limit, shared with its refusals.
    """

    def __init__(self, logger: logging.Logger, quiet: Quiet) -> None:
        super().__init__(logger, {})
        self.quiet = quiet

    @property
    def level(self) -> int:  # uvicorn reads it to skip its trace lines
        return self.logger.level

    def log(self, level: int, msg: Any, *args: Any, **kwargs: Any) -> None:
        if not self.isEnabledFor(level):
            return
        args = tuple(clip(a) for a in args)
        if level == logging.WARNING:
            text = str(msg) % args if args else str(msg)
            return self.quiet.warn(f"{self.logger.name}: {msg}", text, self.logger, **kwargs)
        self.logger.log(level, msg, *args, **kwargs)

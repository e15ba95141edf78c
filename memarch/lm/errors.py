"""Errors of the LM layer: an endpoint that cannot be reached, and an answer that cannot be used."""
from __future__ import annotations

from memarch.errors import MemarchError


class LMUnavailableError(MemarchError):
    """An LM endpoint is down, too slow or refuses us; the message is one line saying which and why.

    A trial that hits it is marked failed; the study goes on.
    """

    def __init__(self, message: str, role: str | None = None):
        super().__init__(message)
        self.role = role


class LMOutputError(ValueError):
    """An LM answer did not parse into its Signature's types, even after the corrective retry.

    A ``ValueError`` so that module contracts ("raise ValueError on an answer that does not
    parse", see the encoder base) send the caller to its LM-free path.
    """

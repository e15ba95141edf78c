"""Retriever settings: each retriever declares its config keys with defaults; user config is
checked against them (unknown keys are logged and ignored, values take the default's type)."""
from __future__ import annotations

import logging
from typing import Any, Mapping

from memarch.errors import MemarchError
from memarch.modules.retrievers._aware import AWARENESS
from memarch.modules.retrievers._packing import PACKING

# every retriever's packing and query-aware knobs, read by the base class
SHARED = frozenset(k.name for k in (*PACKING, *AWARENESS))

log = logging.getLogger(__name__)


def settings(name: str, defaults: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    """``defaults`` updated with ``config``.

    Unknown keys only warn: a study may carry one retriever's config into a trial of another.

    Example::

        settings("mmr", {"mmr_lambda": 0.5}, {"mmr_lambda": "0.3"})  # {"mmr_lambda": 0.3}
    """
    out = dict(defaults)
    for key, value in config.items():
        if key in SHARED and key not in defaults:
            continue
        if key not in defaults:
            log.warning("retriever %s: ignoring unknown config key %r (known: %s)",
                        name, key, ", ".join(sorted(defaults)))
            continue
        out[key] = _coerce(name, key, value, defaults[key])
    return out


def _coerce(name: str, key: str, value: Any, default: Any) -> Any:
    try:
        if isinstance(default, bool):
            return bool(value)
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float):
            return float(value)
        if isinstance(default, tuple):
            return tuple(value)
    except (TypeError, ValueError):
        raise MemarchError(f"retriever {name}: config {key}={value!r} is not a {type(default).__name__}") from None
    return value

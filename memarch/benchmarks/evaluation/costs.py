"""What a trial costs beyond its quality: the memory kept at the end (items and words, per
namespace), per-query read latency percentiles and the LM tokens spent — the costs a study can
minimise as objectives (see memarch/optimizers/search/objectives.py)."""
from __future__ import annotations

from typing import Any

import numpy as np

from memarch.pipeline.retrieval import ContextLines


def memory_costs(store: Any) -> tuple[dict[str, float], dict[str, dict[str, int]]]:
    """(costs, per namespace) of the active items in ``store``.

    Example::

        cost, per_ns = memory_costs(program.store)
        cost["memory_words"], per_ns["conv-26"]["words"]

    Costs: ``memory_items`` and ``memory_words`` summed over namespaces (words as the context
    budget counts them, `count_words`), ``memory_words_max_ns`` the largest namespace (what one
    user keeps). Deleted items (tombstones) are not memory a read can use, so they do not count.
    """
    per_ns: dict[str, dict[str, int]] = {}
    words = ContextLines.of(store.resources.texts).words  # `count_words`, through the store's memo
    for ns in store.namespaces():
        active = store.list(ns)
        per_ns[ns] = {"items": len(active), "words": sum(words(it.text) for it in active)}
    cost = {"memory_items": float(sum(v["items"] for v in per_ns.values())),
            "memory_words": float(sum(v["words"] for v in per_ns.values())),
            "memory_words_max_ns": float(max((v["words"] for v in per_ns.values()), default=0))}
    return cost, per_ns


def read_costs(latencies_s: list[float]) -> dict[str, float]:
    """Total read time and the per-query latency median and 95th percentile in milliseconds (all 0
    when nothing was read)."""
    lat = np.asarray(latencies_s or [0.0], dtype=float)
    return {"read_s": float(lat.sum()), "read_p50_ms": round(float(np.percentile(lat, 50) * 1000), 4),
            "read_p95_ms": round(float(np.percentile(lat, 95) * 1000), 4)}


def lm_tokens(cost: dict[str, float]) -> float:
    """Every LM token of the trial, in and out, over all roles (0 without an LM)."""
    return float(cost.get("tokens_in", 0.0) + cost.get("tokens_out", 0.0))

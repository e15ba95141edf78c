"""Costs on every TrialResult: memory kept (items, words, per namespace), write time, per-query
read latency and LM tokens, from a real evaluation on a tiny generated benchmark."""
from __future__ import annotations

import pytest

from memarch.benchmarks.generated import GeneratedConversations
from memarch.pipeline.architecture import Architecture
from memarch.benchmarks.evaluation.costs import memory_costs, read_costs
from memarch.benchmarks.evaluation.evaluate import evaluate
from memarch.pipeline.program import MemoryProgram
from memarch.pipeline.retrieval import count_words


def test_trial_result_carries_memory_latency_and_lm_costs(hash_resources):
    arch = Architecture(("turn",), "vector", "hybrid", "lightweight")
    program = MemoryProgram(arch, resources=hash_resources, top_k=4, context_budget=200)
    result = evaluate(program, GeneratedConversations(seed=1, conversations=2), split="search", limit=12)
    assert not result.failed, result.error
    c = result.cost
    per_ns = result.metadata["memory_per_namespace"]
    # the figures are those of the store the trial left behind, counted as the context budget counts
    active = {ns: program.store.list(ns) for ns in program.store.namespaces()}
    assert set(per_ns) == set(active) and len(per_ns) == 2
    for ns, items in active.items():
        assert per_ns[ns] == {"items": len(items), "words": sum(count_words(it.text) for it in items)}
    assert c["memory_items"] == sum(v["items"] for v in per_ns.values()) > 0
    assert c["memory_words"] == sum(v["words"] for v in per_ns.values()) > c["memory_items"]
    assert c["memory_words_max_ns"] == max(v["words"] for v in per_ns.values()) < c["memory_words"]
    assert c["write_s"] > 0 and c["read_p95_ms"] >= c["read_p50_ms"] > 0
    assert c["lm_tokens"] == 0.0  # no LM ran


def test_no_memory_baseline_costs_nothing_to_keep(hash_resources):
    result = evaluate(None, GeneratedConversations(seed=1, conversations=1), split="search",
                      resources=hash_resources, limit=5)
    assert "memory_words" not in result.cost and result.cost["lm_tokens"] == 0.0


def test_memory_costs_skip_deleted_items(hash_resources):
    from memarch.pipeline.items import MemoryItem

    program = MemoryProgram(Architecture(("turn",), "json", "hybrid", "lightweight"), resources=hash_resources)
    store = program.store
    store.add([MemoryItem("one two three", "turn", id="a", namespace="u1"),
               MemoryItem("four five", "turn", id="b", namespace="u1"),
               MemoryItem("six", "turn", id="c", namespace="u2")])
    store.delete("b", "u1")
    cost, per_ns = memory_costs(store)
    assert per_ns == {"u1": {"items": 1, "words": 3}, "u2": {"items": 1, "words": 1}}
    assert cost == {"memory_items": 2.0, "memory_words": 4.0, "memory_words_max_ns": 3.0}


def test_read_costs_percentiles():
    got = read_costs([0.001] * 19 + [0.101])
    assert got["read_p50_ms"] == pytest.approx(1.0)
    assert got["read_p95_ms"] == pytest.approx(1.0 + 0.05 * 100, rel=1e-6)  # numpy's linear interpolation
    assert read_costs([]) == {"read_s": 0.0, "read_p50_ms": 0.0, "read_p95_ms": 0.0}

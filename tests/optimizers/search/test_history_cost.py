"""`cost_of` (the one cost number of a `TrialRecord`, which the guided rounds' Pareto front and the
round artifacts read) counts each LM token once: a trial's cost holds the per-role counts
(``tokens_in_task``, ...) and their totals (``tokens_in``, ``tokens_out``) side by side, as
`evaluate` writes them; summing every ``tokens*`` key read 2x (the defect `CompileReport.tokens`
had)."""
from __future__ import annotations

from memarch.benchmarks.evaluation.costs import lm_tokens
from memarch.lm.accounting import RoleUsage, UsageSnapshot
from memarch.optimizers.search.history import cost_of
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.trial import TrialResult

ARCH = Architecture(("turn",), "vector", "hybrid", "lightweight")


def _result(cost: dict[str, float]) -> TrialResult:
    return TrialResult(ARCH, "b", "search", score=0.5, cost=cost)


def test_the_cost_counts_each_lm_token_once():
    usage = UsageSnapshot({"task": RoleUsage(calls=1, tokens_in=100, tokens_out=10),
                           "meta": RoleUsage(calls=2, tokens_in=30, tokens_out=5)})
    cost = {**usage.to_metrics(), "memory_items": 7.0}
    cost["lm_tokens"] = lm_tokens(cost)
    assert cost_of(_result(cost)) == 145  # not 290


def test_without_an_lm_the_cost_is_the_memory_size():
    assert cost_of(_result({"memory_items": 7.0, "memory_words": 80.0})) == 7
    assert cost_of(_result({})) == 0

"""`CompileReport.tokens` is the LM tokens the search spent: each trial's cost holds the per-role
counts (``tokens_in_task``, ...) and their totals (``tokens_in``, ``tokens_out``) side by side, as
`evaluate` writes them, and the report counts each token once (it used to add the totals to the
per-role counts: 110 LM tokens reported as 220)."""
from __future__ import annotations

import optuna

from search_helpers import SyntheticMetric

from memarch.benchmarks.evaluation.costs import lm_tokens
from memarch.lm.accounting import RoleUsage, UsageSnapshot
from memarch.optimizers.compile import MemarchOptimizer

optuna.logging.set_verbosity(optuna.logging.WARNING)


class _WithLMCost(SyntheticMetric):
    """The synthetic evaluator, each evaluation's cost as `evaluate` records an LM's: 100 tokens in
    and 10 out for the task role, 110 in all."""

    def __call__(self, arch, data="search"):
        result = super().__call__(arch, data)
        result.cost = UsageSnapshot({"task": RoleUsage(calls=1, tokens_in=100, tokens_out=10)}).to_metrics()
        result.cost["lm_tokens"] = lm_tokens(result.cost)
        return result


def test_the_report_counts_each_lm_token_once(space):
    opt = MemarchOptimizer(_WithLMCost(n_queries=20), strategy="random", budget=3, seed=0)
    opt.compile(space)
    report = opt.report
    assert report.trials == 3
    assert report.tokens == 110 * report.trials  # not 220 per trial

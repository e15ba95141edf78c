"""`compare(workers=N)`: the (strategy, seed) runs side by side in forked processes give the reports
each run gets alone, the progress callback hears every trial, and the evaluations are counted."""
from __future__ import annotations

import pytest
from search_helpers import SyntheticMetric

from memarch.cli import main
from memarch.errors import MemarchError
from memarch.optimizers.comparison import compare
from memarch.optimizers.evaluators import CachedEvaluator


def _same(report) -> dict:
    d = report.to_dict()
    d.pop("wall_s")
    return d


def test_side_by_side_runs_give_what_each_run_gets_alone(space):
    kw = dict(seeds=2, budget=5, baselines=True, warm_start="presets")
    serial = compare(CachedEvaluator(SyntheticMetric(n_queries=30)), space, ["guided", "random"], **kw)
    heard = []
    parallel = compare(CachedEvaluator(SyntheticMetric(n_queries=30)), space, ["guided", "random"], workers=2,
                       on_trial=lambda n, arch, result: heard.append((n, arch.key(), result.score)), **kw)
    for strat in ("guided", "random"):
        assert [_same(r) for r in serial.runs[strat]] == [_same(r) for r in parallel.runs[strat]]
    assert serial.table() == parallel.table() and serial.baselines == parallel.baselines
    assert len(heard) == sum(len(r.evaluated) for rs in parallel.runs.values() for r in rs)  # every trial
    # each worker pays for its own evaluations (no cache shared across processes): counted, never less
    assert parallel.evaluations >= serial.evaluations > 0


def test_workers_need_an_lm_free_run(space):
    with pytest.raises(MemarchError, match="LM-free"):
        compare(SyntheticMetric(), space, ["random"], seeds=2, budget=2, workers=2, lm=object())


@pytest.mark.parametrize("extra, said", [(["--workers", "0"], "--workers must be at least 1"),
                                         (["--workers", "2", "--lm", "local"], "LM-free")])
def test_the_cli_refuses_in_one_line(capsys, extra, said):
    assert main(["compare", "--budget", "2", "--seeds", "2", "--no-tracking", "--storage", "memory", *extra]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err

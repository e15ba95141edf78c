"""`MemarchSampler`: memarch's samplers — Optuna's sampler contract plus what compile, landscape
replays and tracking read from a sampler (`SamplerReport`: its rounds, the round that proposed a
trial, its counts), declared here with empty defaults. `report_of` reads any study's sampler: an
Optuna sampler (random, TPE, NSGA-II, QMC, a user's own) reports nothing."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from optuna.samplers import BaseSampler


class SamplerReport:
    """What a sampler reports besides its draws; the defaults say it has nothing to report.

    Members: ``rounds`` (each round's decision: diagnosis, gradient, proposals; logged to MLflow as
    round artifacts), `round_of`, `stats`.
    """

    # Each round's decision, oldest first (a sampler without rounds: none).
    rounds: Sequence[dict[str, Any]] = ()

    def round_of(self, trial_number: int) -> dict[str, Any] | None:
        """The round that proposed trial ``trial_number`` (None: not proposed by a round of this
        sampler in this process)."""
        return None

    def stats(self) -> dict[str, int]:
        """The sampler's own counts (dropped proposals, fallback draws, ...), each named in
        `memarch.optimizers.compile.counts.COUNT_WORDS`."""
        return {}


class MemarchSampler(SamplerReport, BaseSampler):
    """Base of memarch's samplers: implement Optuna's `BaseSampler` (``infer_relative_search_space``,
    ``sample_relative``, ``sample_independent``) and override the `SamplerReport` members the
    sampler has.

    Example::

        class FirstValid(MemarchSampler):
            def infer_relative_search_space(self, study, trial):
                return {}
            def sample_relative(self, study, trial, search_space):
                return {}
            def sample_independent(self, study, trial, name, distribution):
                return distribution.choices[0]

        optuna.create_study(sampler=FirstValid())
    """


_NOTHING = SamplerReport()


def report_of(sampler: BaseSampler) -> SamplerReport:
    """What ``sampler`` reports: itself when it is one of memarch's, else an empty report (one
    of Optuna's samplers — random, TPE, NSGA-II, QMC — or a user's own)."""
    return sampler if isinstance(sampler, MemarchSampler) else _NOTHING

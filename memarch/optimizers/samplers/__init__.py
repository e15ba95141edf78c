"""Samplers: every search strategy is an Optuna sampler (the one contract they all honour).

- ``base``        `MemarchSampler`, the base of memarch's samplers: Optuna's contract plus what a
                  sampler reports (`SamplerReport`: rounds, `round_of`, `stats`), and `report_of`,
                  which reads any sampler's report (Optuna's own report nothing);
- ``strategies``  the strategies by name (`STRATEGIES`, `make_sampler`, `check_strategy`, and the
                  Optuna samplers that do not fit, `UNSUPPORTED`);
- ``bruteforce``  `BruteForceSampler`: every valid architecture once, in a seeded order;
- ``gp``          `GPBaseline`: Optuna's GP sampler made to survive pruned invalid draws;
- ``guided/``     AutoMem's `GuidedSampler` (diagnosis -> textual gradient -> proposals by a
                  `Proposer`, ledger, observations) and ALMA's `ArchiveSampler`.

May import: ``search``, ``evaluators``, ``pruners`` and the layers below ``optimizers``. Names are
imported on use: ``import memarch.optimizers.samplers`` loads no sampler.
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "STRATEGIES": "strategies", "UNSUPPORTED": "strategies", "check_strategy": "strategies",
    "make_sampler": "strategies",
    "MemarchSampler": "base", "SamplerReport": "base", "report_of": "base",
    "BruteForceSampler": "bruteforce", "GPBaseline": "gp",
    "GuidedSampler": "guided.sampler", "ArchiveSampler": "guided.archive_sampler",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)


__all__ = sorted(_EXPORTS)

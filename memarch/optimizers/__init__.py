"""The DSPy-style face of memarch: `MemarchOptimizer.compile`, `compare` and the runoff, above the
concerns they combine, each a folder of its own:

- ``search/``     the Optuna search: parameter space, study, the trial function, history, stop rules,
                  the study's objectives, selection and the Pareto front;
- ``guided/``     the guided sampler (diagnosis -> textual gradient -> proposals, ledger) and the archive;
- ``landscapes/`` tabulated landscapes: build, join, replay of strategies on one, compare against one;
- ``prompts/``    DSPy prompt optimisation of a program's LM modules;
- ``finetune/``   the export of good memory decisions for fine-tuning;
- ``tracking/``   MLflow: runs, run context, UI view, the pyfunc model, DSPy traces.

May import: ``benchmarks``, ``modules``, ``lm``, ``pipeline``, ``errors``. guided, prompts, finetune
and tracking do not know each other; they build on ``search``; ``strategies`` names every sampler;
compile, compare and landscapes sit on top (pyproject.toml's import-linter contracts check it).
Names are imported on use, so ``import memarch.optimizers`` loads no Optuna, DSPy or MLflow.
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "MemarchOptimizer": "compile", "CompileReport": "compile",
    "compare": "comparison", "Comparison": "comparison",
    "GuidedSampler": "guided.sampler",
    "BenchmarkMetric": "search.metric", "CachedMetric": "search.metric",
    "record_outcomes": "search.trial_function", "record_result": "search.trial_function",
    "hypervolume": "search.pareto", "knee": "search.pareto", "non_dominated": "search.pareto",
    "Proposal": "search.proposal",
    "parse_objectives": "search.objectives",
    "ParamSpace": "search.param_space",
    "STRATEGIES": "strategies", "make_sampler": "strategies",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)


__all__ = sorted(_EXPORTS)

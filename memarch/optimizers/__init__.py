"""The DSPy-style face of memarch: `MemarchOptimizer.compile`, `compare` and the runoff, above the
concerns they combine, each a folder of its own:

- ``landscapes/`` tabulated landscapes: build, join, replay of strategies on one, compare against one;
- ``comparison/`` `compare`, `CompareSettings`: strategies side by side over seeds (and their Pareto fronts);
- ``compile/``    `MemarchOptimizer`, `CompileReport` (with `SearchSettings` and `PromptSettings`,
                  defined in ``search/`` where the runner reads them);
- ``runoff.py``   the top architectures re-scored on validation, the pick;
- ``prompts/``    DSPy prompt optimisation of a program's LM modules;
- ``finetune/``   the export of good memory decisions for fine-tuning;
- ``tracking/``   MLflow: runs, run context, UI view, the pyfunc model, DSPy traces;
- ``samplers/``   every strategy as an Optuna sampler (`MemarchSampler`): by name, brute force, GP,
                  guided, archive;
- ``search/``     the Optuna search: its settings, parameter space, study, trial function, history,
                  stop rules, the study's objectives, selection and the Pareto front;
- ``evaluators/`` `Evaluator`, the contract an architecture is scored through, and its kinds;
- ``pruners/``    pruners by name and instance-by-instance scoring.

May import: ``benchmarks``, ``modules``, ``lm``, ``pipeline``, ``errors`` (never ``app``). Each
folder imports only the ones listed after it in pyproject.toml's import-linter contract, and the
concerns of one line there do not know each other. Names are imported on use, so
``import memarch.optimizers`` loads no Optuna, DSPy or MLflow.
"""
from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "MemarchOptimizer": "compile", "CompileReport": "compile", "SearchSettings": "compile",
    "PromptSettings": "compile",
    "compare": "comparison", "Comparison": "comparison", "CompareSettings": "comparison",
    "Evaluator": "evaluators", "BenchmarkEvaluator": "evaluators", "CachedEvaluator": "evaluators",
    "CallableEvaluator": "evaluators", "EvaluatorWrapper": "evaluators",
    "LandscapeEvaluator": "landscapes.evaluator",
    "GuidedSampler": "samplers", "ArchiveSampler": "samplers",
    "STRATEGIES": "samplers", "make_sampler": "samplers",
    "PRUNERS": "pruners", "make_pruner": "pruners",
    "record_outcomes": "search.trial_function", "record_result": "search.trial_function",
    "TrialFunction": "search.trial_function", "Search": "search.runner",
    "hypervolume": "search.pareto", "knee": "search.pareto", "non_dominated": "search.pareto",
    "Proposal": "search.proposal",
    "parse_objectives": "search.objectives",
    "ParamSpace": "search.param_space",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)


__all__ = sorted(_EXPORTS)

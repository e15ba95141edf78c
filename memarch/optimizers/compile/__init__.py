"""compile: the search as a DSPy-style optimizer.

- ``optimizer``  `MemarchOptimizer`: search -> runoff on validation -> test report -> prompts, as a
                 plain sequence of steps;
- ``settings``   `SearchSettings`: how one search runs (strategy, budget, seed, study, warm start, ...);
- ``report``     `CompileReport` (`CompileReport.from_run`) and the run's counts.

May import: ``runoff``, ``samplers``, ``prompts``, ``search``, ``evaluators``, ``pruners`` and the
layers below ``optimizers``.
"""
from memarch.optimizers.compile.optimizer import MemarchOptimizer
from memarch.optimizers.compile.report import WARNED_COUNTS, CompileReport, warn_counts
from memarch.optimizers.compile.settings import SearchSettings

__all__ = ["CompileReport", "MemarchOptimizer", "SearchSettings", "WARNED_COUNTS", "warn_counts"]

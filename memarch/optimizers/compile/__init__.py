"""compile: the search as a DSPy-style optimizer.

- ``optimizer``  `MemarchOptimizer`: search -> runoff on validation -> test report -> prompts, as a
                 plain sequence of steps, each recording what it did in the `CompileRun`;
- ``run``        `CompileRun`: the record of one compile, filled as it goes;
- ``report``     `CompileReport` (`CompileReport.from_run`) and the run's counts.

How a search runs is one `SearchSettings` (with stage two's `PromptSettings`), defined below in
``search/settings.py`` because the runner reads it too, and exported here.

May import: ``runoff``, ``samplers``, ``prompts``, ``search``, ``evaluators``, ``pruners`` and the
layers below ``optimizers``.
"""
from memarch.optimizers.compile.optimizer import MemarchOptimizer
from memarch.optimizers.compile.report import WARNED_COUNTS, CompileReport, warn_counts
from memarch.optimizers.compile.run import CompileRun
from memarch.optimizers.search.settings import DEFAULT_BUDGET, DEFAULT_FINALISTS, PromptSettings, SearchSettings

__all__ = ["CompileReport", "CompileRun", "DEFAULT_BUDGET", "DEFAULT_FINALISTS", "MemarchOptimizer",
           "PromptSettings", "SearchSettings", "WARNED_COUNTS", "warn_counts"]

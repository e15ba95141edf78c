"""comparison: strategies side by side on equal terms over seeds.

- ``compare``  `compare` and `Comparison`: the same warm start and budget per seed, best-so-far
               curves, trials to target, picks chosen on validation and reported on test beside
               the presets and the no-memory agent;
- ``settings`` `CompareSettings`: the seeds, target, baselines, studies' prefix and workers;
- ``fronts``   its multi-objective part: each strategy's search fronts and hypervolumes.

May import: ``compile`` and the layers below it.
"""
from memarch.optimizers.comparison.compare import Comparison, compare, trials_to_target
from memarch.optimizers.comparison.fronts import FrontSummary
from memarch.optimizers.comparison.settings import CompareSettings

__all__ = ["CompareSettings", "Comparison", "FrontSummary", "compare", "trials_to_target"]

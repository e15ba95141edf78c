"""comparison: strategies side by side on equal terms over seeds.

- ``compare``  `compare` and `Comparison`: the same warm start and budget per seed, best-so-far
               curves, trials to target, picks chosen on validation and reported on test beside
               the presets and the no-memory agent;
- ``fronts``   its multi-objective part: each strategy's search fronts and hypervolumes.

May import: ``compile`` and the layers below it.
"""
from memarch.optimizers.comparison.compare import Comparison, compare, trials_to_target
from memarch.optimizers.comparison.fronts import FrontSummary

__all__ = ["Comparison", "FrontSummary", "compare", "trials_to_target"]

"""The guided strategy (AutoMem): diagnosis -> textual gradient -> proposals, with an experience
ledger, per-choice observation statistics, a Pareto front and a noise-guarded champion."""
from memarch.optimizers.guided.strategy import GuidedStrategy

__all__ = ["GuidedStrategy"]

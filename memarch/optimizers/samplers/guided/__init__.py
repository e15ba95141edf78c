"""The guided strategy (AutoMem) as an Optuna sampler: diagnosis -> textual gradient -> proposals,
with an experience ledger, per-choice observation statistics, a Pareto front and a noise-guarded
champion."""
from memarch.optimizers.samplers.guided.sampler import GuidedSampler

__all__ = ["GuidedSampler"]

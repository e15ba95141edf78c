"""The guided strategy (AutoMem) as an Optuna sampler: diagnosis -> textual gradient -> proposals,
with an experience ledger, per-choice observation statistics, a Pareto front and a noise-guarded
champion. Every proposer implements `Proposer` (proposer_base.py: ``propose`` and the counts the
sampler reads); `AttributionProposer` (proposer.py) without an LM, `LMProposer` (lm_proposer.py)
with one."""
from memarch.optimizers.samplers.guided.sampler import GuidedSampler

__all__ = ["GuidedSampler"]

"""The search over memory architectures: an Optuna space derived from the registry, the strategies
(every one an Optuna sampler: random, tpe, nsga2, bruteforce, guided), the objective contract with one
or several objectives (quality and costs), resumable multi-worker studies, MLflow tracking, `compile()`
and `compare`."""
from memarch.optimizers.compare import Comparison, compare
from memarch.optimizers.compile import CompileReport, MemarchOptimizer
from memarch.optimizers.guided.sampler import GuidedSampler
from memarch.optimizers.metric import BenchmarkMetric, CachedMetric
from memarch.optimizers.objective import record_outcomes, record_result
from memarch.optimizers.pareto import hypervolume, knee, non_dominated
from memarch.optimizers.proposal import Proposal
from memarch.optimizers.study_objectives import parse_objectives
from memarch.optimizers.space import SearchSpace
from memarch.optimizers.strategies import STRATEGIES, make_sampler

__all__ = ["MemarchOptimizer", "CompileReport", "compare", "Comparison", "BenchmarkMetric", "CachedMetric",
           "GuidedSampler", "Proposal", "SearchSpace", "STRATEGIES", "make_sampler", "record_outcomes",
           "record_result",
           "hypervolume", "knee", "non_dominated", "parse_objectives"]

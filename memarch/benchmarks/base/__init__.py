"""The benchmark contract, at the bottom of `memarch.benchmarks`: `Benchmark` (the declared members
every benchmark has, and the stream protocol's dialogues; benchmark.py), `TaskBenchmark` (agent
tasks under collect -> deploy; tasks.py), what they hold (`Dialogue`, `Question`, `AgentTask`;
data.py), the split rules (splits.py) and the name lookup `evaluate` uses (catalog.py).

May import: ``pipeline`` and ``errors`` only (every other part of ``memarch.benchmarks`` imports it)."""
from memarch.benchmarks.base.benchmark import COLLECT_DEPLOY, DECLARED, PROTOCOLS, STREAM, Benchmark, \
    check_declarations
from memarch.benchmarks.base.catalog import resolve_benchmark, use_catalog
from memarch.benchmarks.base.data import AgentTask, Dialogue, Question, data_root
from memarch.benchmarks.base.splits import DEFAULT_FRACTIONS, MIN_DIALOGUES_TO_SPLIT, SPLIT_BY, SPLITS, \
    balanced_units
from memarch.benchmarks.base.tasks import TaskBenchmark

__all__ = ["AgentTask", "Benchmark", "COLLECT_DEPLOY", "DECLARED", "DEFAULT_FRACTIONS", "Dialogue",
           "MIN_DIALOGUES_TO_SPLIT", "PROTOCOLS", "Question", "SPLITS", "SPLIT_BY", "STREAM", "TaskBenchmark",
           "balanced_units", "check_declarations", "data_root", "resolve_benchmark", "use_catalog"]

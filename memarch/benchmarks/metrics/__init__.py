"""Metrics: what one evaluation measures. The registry (`registry.py`: the metric names, the
default, how each is described, the benchmarks' official reports), the strict `answer_span`,
answer / evidence recall, LoCoMo's QA F1 with its Porter stemmer, LongMemEval's official retrieval
metrics (`longmemeval_official.py`, an `OfficialReport`) and its LM-free `span_or_evidence`.
A *metric* scores an evaluation; a study's *objectives* are the
metric and the costs it optimises (`memarch.optimizers.search.objectives`).

May import: the benchmark base (`Question`, `Dialogue`) and ``pipeline``."""

"""Metrics: what one evaluation measures. The registry (`registry.py`: the metric names, the
default, how each is described), the strict `answer_span`, answer / evidence recall and LoCoMo's
QA F1 with its Porter stemmer. A *metric* scores an evaluation; a study's *objectives* are the
metric and the costs it optimises (`memarch.optimizers.search.objectives`).

May import: ``pipeline``."""

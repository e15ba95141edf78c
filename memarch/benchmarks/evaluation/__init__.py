"""The evaluation harness: `evaluate()` runs an architecture on a benchmark split under the protocol
the benchmark declares (``stream``, ``collect -> deploy``; one run each, runs.py), scores each
question, attributes failures to modules from provenance, diagnoses them (the rule-based FGMD
classifier), and counts costs and LM fallbacks.

May import: the benchmark base, metrics, agents, ``modules``, ``lm``, ``pipeline``."""

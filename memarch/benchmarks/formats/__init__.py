"""memarch's own JSONL data format (docs/data.md): the JSON Schema, the checker that reports every
problem with its line, dialogue records and recorded agent tasks.

May import: the benchmark base, the evaluation harness (attribution), ``pipeline``."""

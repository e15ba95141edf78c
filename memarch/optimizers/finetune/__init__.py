"""Fine-tuning export: the memory decisions of a compiled program that led to correct answers,
recorded as (context, decision) pairs and written as chat JSONL for a memory specialist.

May import: ``search``, ``benchmarks`` and below; not guided, prompts or tracking."""

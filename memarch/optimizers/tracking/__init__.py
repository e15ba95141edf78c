"""MLflow: a parent run per study and a nested run per trial (`tracker.py`), what every run records
about where it ran (`run_context.py`), the UI's saved view, the compiled program as an MLflow pyfunc
model, and DSPy LM call traces.

May import: ``samplers`` (only its base: what a sampler reports), ``search``, ``benchmarks`` and
below; not guided, prompts or finetune."""

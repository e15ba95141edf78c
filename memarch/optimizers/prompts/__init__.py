"""DSPy prompt optimisation of a program's LM modules (reader and encoders): the student program,
the metric with feedback, the optimiser runs (MIPROv2, GEPA, bootstrap) and their records.

May import: ``search``, ``benchmarks`` and below; not guided, finetune or tracking."""

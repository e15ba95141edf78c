"""The Optuna search: the parameter space derived from the registry (`ParamSpace`), studies and
storage, the trial function a study calls (`TrialFunction`, `record_result`), the history the
strategies read, stop rules, the study's objectives, selection, the Pareto front, bootstrap CIs and
the samplers that need nothing else (bruteforce, repeat-aware GP).

The base of ``optimizers``: imports only ``benchmarks`` and the layers below."""

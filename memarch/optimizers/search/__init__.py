"""The Optuna search: how it runs (`SearchSettings`, with stage two's `PromptSettings`, and the
defaults every entry point shares: `DEFAULT_BUDGET`, `DEFAULT_FINALISTS`), the parameter space
derived from the registry (`ParamSpace`), studies and storage, the trial function a study calls
(`TrialFunction`, `record_result`), the worker that runs it (`Search`), the history the strategies
read, stop rules, the study's objectives, selection, the champion's sign test, the Pareto front,
bootstrap CIs and curves.

May import: ``evaluators``, ``pruners`` and the layers below ``optimizers``."""

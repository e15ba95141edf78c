"""DSPy calls traced into MLflow (``mlflow.dspy.autolog``), each trace linked to the run of the
trial whose evaluation made it. On by default whenever the CLI is given an LM (``--no-trace-lm``
turns it off): a trace per module and LM call is stored, which costs time and disk."""
from __future__ import annotations

import logging
from typing import Any

from dspy.utils.callback import BaseCallback

logger = logging.getLogger(__name__)

LINK_BATCH = 100  # MlflowClient.link_traces_to_run takes at most 100 trace ids per call


class _TraceIds(BaseCallback):
    """Records the trace id of every DSPy module / LM call (registered after MLflow's callback,
    so the span MLflow just opened is the active one)."""

    def __init__(self):
        self.pending: dict[str, None] = {}

    def _record(self) -> None:
        import mlflow

        span = mlflow.get_current_active_span()
        if span is not None:
            self.pending[span.trace_id] = None

    def on_module_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        self._record()

    def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        self._record()


class LMTracing:
    """Trace DSPy calls into an MLflow experiment and link them to runs.

    Example::

        tracing = LMTracing("sqlite:///mlruns/mlflow.db", experiment_id)
        ... evaluate a trial with an LM ...
        tracing.link(client, trial_run_id)   # the traces made since the last link
        tracing.close()

    Args:
        tracking_uri: the MLflow store (set process-wide: MLflow's tracer exports there).
        experiment_id: where the traces go (set as the active experiment).
    """

    def __init__(self, tracking_uri: str, experiment_id: str):
        import dspy
        import mlflow
        import mlflow.dspy

        self.old_uri = mlflow.get_tracking_uri() if mlflow.is_tracking_uri_set() else None
        mlflow.set_tracking_uri(tracking_uri)
        mlflow.set_experiment(experiment_id=experiment_id)
        mlflow.dspy.autolog(log_traces=True, silent=True)
        self.ids = _TraceIds()
        dspy.settings.configure(callbacks=[*dspy.settings.callbacks, self.ids])
        self.linked = 0
        self.failed_links = 0

    def take(self) -> list[str]:
        """The trace ids recorded since the last call (their export flushed first)."""
        import mlflow

        if self.ids.pending:
            mlflow.flush_trace_async_logging()
        ids, self.ids.pending = list(self.ids.pending), {}
        return ids

    def link(self, client: Any, run_id: str) -> int:
        """Link the traces made since the last link to ``run_id``; returns how many. A failure is
        logged and counted (``failed_links``), never raised: the trial's run is already logged."""
        ids = self.take()
        for i in range(0, len(ids), LINK_BATCH):
            batch = ids[i:i + LINK_BATCH]
            try:
                client.link_traces_to_run(batch, run_id)
                self.linked += len(batch)
            except Exception as exc:
                self.failed_links += len(batch)
                logger.warning("%d LM traces not linked to run %s: %s: %s", len(batch), run_id,
                               type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")
        return len(ids)

    def close(self) -> None:
        import dspy
        import mlflow.dspy

        mlflow.dspy.autolog(disable=True, silent=True)
        mlflow.set_tracking_uri(self.old_uri)  # None: back to "not set"
        dspy.settings.configure(callbacks=[c for c in dspy.settings.callbacks if c is not self.ids])

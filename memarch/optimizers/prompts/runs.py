"""MLflow runs of prompt optimisation: one run nested under the study's parent run, with a nested
run per step (validation before, the optimizer, validation after, test after)."""
from __future__ import annotations

import math
from typing import Any


class PromptRuns:
    """Logs the steps of `optimize_prompts` through a `Tracker`'s client (no-op without one).

    Example::

        runs = PromptRuns(tracker, "gepa")
        runs.begin(report); runs.step("validation before", {"validation_score": 0.41}); runs.end(report)

    Args:
        tracker: a `memarch.optimizers.tracking.tracker.Tracker` whose study run is the parent, or None.
        optimizer: the prompt optimizer's name (in the run names).
    """

    def __init__(self, tracker: Any, optimizer: str):
        self.tracker, self.optimizer = tracker, optimizer
        self.run_id: str | None = None

    def _run(self, name: str, parent: str | None) -> str:
        tags = {"memarch.stage": "prompts"}
        if parent:
            tags["mlflow.parentRunId"] = parent
        return self.tracker.client.create_run(self.tracker.experiment_id, run_name=name[:250], tags=tags).info.run_id

    def _log(self, run_id: str, metrics: dict[str, Any], params: dict[str, Any] | None = None) -> None:
        from mlflow.entities import Metric, Param

        nums = [Metric(k, float(v), 0, 0) for k, v in metrics.items()
                if isinstance(v, (int, float)) and v is not None and math.isfinite(float(v))]
        self.tracker.client.log_batch(run_id, metrics=nums,
                                      params=[Param(k, str(v)[:500]) for k, v in (params or {}).items()])

    def begin(self, report: Any) -> None:
        if self.tracker is None:
            return
        self.run_id = self._run(f"prompts {self.optimizer}", self.tracker.parent_run_id)
        self._log(self.run_id, {}, {"prompt_optimizer": self.optimizer, "predictors": ",".join(report.predictors)})

    def step(self, name: str, metrics: dict[str, Any], artifact: dict[str, Any] | None = None) -> None:
        if self.tracker is None or self.run_id is None:
            return
        rid = self._run(f"prompts {self.optimizer}: {name}", self.run_id)
        self._log(rid, metrics)
        if artifact is not None:
            self.tracker.client.log_dict(rid, artifact, "prompts.json")
        self.tracker.client.set_terminated(rid)

    def end(self, report: Any) -> None:
        if self.tracker is None or self.run_id is None:
            return
        self._log(self.run_id, {"validation_before": report.validation_before,
                                "validation_after": report.validation_after, "test_after": report.test_after,
                                "kept_optimised": int(report.kept == "optimised"), **report.counts})
        self.tracker.client.log_dict(self.run_id, report.to_dict(), "prompt_report.json")
        self.tracker.client.set_terminated(self.run_id, status="FAILED" if report.error else "FINISHED")

    def skipped(self, report: Any) -> None:
        """Nothing to optimise: counted on the study's run, not silently dropped."""
        if self.tracker is not None and self.tracker.parent_run_id:
            self._log(self.tracker.parent_run_id, {"prompts_skipped": 1},
                      {"prompt_optimizer": f"{self.optimizer} ({report.kept})"})

"""MLflow tracking of a study: one parent run per study, one nested run per trial with params
(encode, store, retrieve, manage), metrics (the study's objectives, per-category scores, cost, latency) and
artifacts (architecture JSON, diagnosis + textual gradient, ledger; the curve PNG on the parent).
Logged through `MlflowClient` directly: Optuna's MLflowCallback is deprecated and cannot nest."""
from __future__ import annotations

import json
import logging
import math
import os
from pathlib import Path
from typing import Any

from memarch.optimizers.tracking.store_lock import store_lock
from memarch.errors import MemarchError
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.trial import TrialResult

logger = logging.getLogger(__name__)

DEFAULT_TRACKING_URI = "sqlite:///mlruns/mlflow.db"
DEFAULT_ARTIFACTS = "mlruns/artifacts"
EXPERIMENT = "memarch"
PARENT_ATTR = "mlflow_parent_run_id"


def ui_command(tracking_uri: str = DEFAULT_TRACKING_URI, port: int = 5000) -> str:
    return f"mlflow ui --backend-store-uri {tracking_uri} --port {port}"


def _metric_name(text: str) -> str:
    return "".join(c if c.isalnum() or c in "_-./ " else "_" for c in text)


class Tracker:
    """Logs one study to MLflow.

    Example::

        tracker = Tracker("sqlite:///mlruns/mlflow.db")
        tracker.start(study, strategy="guided", seed=0)
        ... Search(..., tracker=tracker).run(study)
        tracker.finish({"test_score": 0.71}, curve_png="curve.png")
    """

    def __init__(self, tracking_uri: str = DEFAULT_TRACKING_URI, *, experiment: str = EXPERIMENT,
                 artifact_root: str | Path = DEFAULT_ARTIFACTS, trace_lm: bool = False):
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        from mlflow.tracking import MlflowClient

        if tracking_uri.startswith("sqlite:///"):
            Path(tracking_uri[len("sqlite:///"):]).expanduser().parent.mkdir(parents=True, exist_ok=True)
        self.tracking_uri = tracking_uri
        try:
            # The first request creates or migrates a new SQLite store: one process at a time
            with store_lock(tracking_uri):
                self.client = MlflowClient(tracking_uri=tracking_uri)
                exp = _experiment_by_name(self.client, experiment)
                if exp is None:
                    root = Path(artifact_root).resolve()
                    root.mkdir(parents=True, exist_ok=True)
                    try:
                        self.experiment_id = self.client.create_experiment(experiment, artifact_location=root.as_uri())
                    except Exception:  # another worker created it first
                        self.experiment_id = self.client.get_experiment_by_name(experiment).experiment_id
                else:
                    self.experiment_id = exp.experiment_id
            from memarch.optimizers.tracking.ui_view import mark_experiment

            mark_experiment(self.client, self.experiment_id, exp.tags if exp else None)  # UI opens on runs
        except MemarchError:
            raise
        except Exception as exc:
            raise MemarchError(f"cannot open MLflow tracking store {tracking_uri}: {type(exc).__name__}: "
                               f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
        self.parent_run_id: str | None = None
        self._ledger: list | None = None
        self.objectives: tuple[str, ...] = ("quality",)
        self.tags: dict[str, str] = {}  # on the parent and every trial run (`run_context.run_tags`)
        self._trial_inputs: list = []  # the search split, as each trial run's dataset input
        self.model_info: Any = None  # MLflow's ModelInfo of the program logged by `log_program`
        # trace_lm: DSPy calls traced (mlflow.dspy.autolog), linked to the trial that made them
        self.lm_tracing = None
        if trace_lm:
            from memarch.optimizers.tracking.lm_tracing import LMTracing

            self.lm_tracing = LMTracing(tracking_uri, self.experiment_id)

    def start(self, study: Any, *, evaluator: Any = None, **params: Any) -> str:
        """The study's parent run (created once; workers and resumed studies reuse it), named
        ``"<strategy> s<seed>"``; with an ``evaluator`` (an `Evaluator`) the runs are tagged with
        the benchmark, data hash, split sizes, version and commit, and the splits are logged as
        dataset inputs (`run_context`)."""
        from memarch.optimizers.tracking.run_context import parent_run_name, run_tags, split_datasets
        from memarch.optimizers.search.study import study_objectives

        self.objectives = study_objectives(study)
        self.tags = run_tags(evaluator, strategy=params.get("strategy"), seed=params.get("seed"))
        inputs = split_datasets(evaluator) if evaluator is not None else []
        self._trial_inputs = [d for d in inputs if d.tags[0].value == "search"]
        run_id = study.user_attrs.get(PARENT_ATTR)
        if run_id is None:
            name = parent_run_name(params["strategy"], params.get("seed")) if "strategy" in params else study.study_name
            run = self.client.create_run(self.experiment_id, run_name=name,
                                         tags={"memarch.study": study.study_name, **self.tags})
            run_id = run.info.run_id
            study.set_user_attr(PARENT_ATTR, run_id)
            for k, v in {**params, "objectives": ",".join(self.objectives)}.items():
                self.client.log_param(run_id, k, str(v)[:500])
            if inputs:
                self.client.log_inputs(run_id, datasets=inputs)
        else:  # a resumed study or another worker: this process's commit may differ
            for k, v in self.tags.items():
                self.client.set_tag(run_id, k, v)
        self.parent_run_id = run_id
        return run_id

    def log_program(self, program: Any, *, registered_name: str | None = None,
                    include_memory: bool = False) -> Any:
        """The compiled program as a pyfunc model of the parent run (`program_model`); with
        ``registered_name`` also a new version of that registered model. Returns MLflow's ModelInfo."""
        from memarch.optimizers.tracking.program_model import log_program_model

        self.model_info = log_program_model(program, tracking_uri=self.tracking_uri, run_id=self.parent_run_id,
                                            registered_name=registered_name, include_memory=include_memory)
        if self.parent_run_id:
            self.client.set_tag(self.parent_run_id, "memarch.model_uri", self.model_info.model_uri)
        return self.model_info

    def callback(self, search: Any = None):
        """An Optuna callback that logs every finished trial of this worker: a nested run per
        evaluated architecture, a nested run per failed trial (with its error), and on the parent
        the running counts of invalid draws, repeats, failures and dropped proposals, plus each new
        round of a guided sampler."""
        return _TrialLogger(self, search)

    def log_round(self, index: int, artifacts: dict[str, Any]) -> None:
        """A guided round's decision, on the parent run."""
        if self.parent_run_id:
            self.client.log_dict(self.parent_run_id, artifacts, f"rounds/round_{index:04d}.json")

    def log_counts(self, step: int, counts: dict[str, float]) -> None:
        from mlflow.entities import Metric

        if self.parent_run_id and counts:
            self.client.log_batch(self.parent_run_id, metrics=[Metric(_metric_name(k), float(v), 0, step)
                                                               for k, v in counts.items()])

    def log_failed(self, number: int, arch_key: str, error: str) -> str:
        tags = {**self.tags, "memarch.trial": str(number), "memarch.state": "failed"}
        if self.parent_run_id:
            tags["mlflow.parentRunId"] = self.parent_run_id
        run = self.client.create_run(self.experiment_id, run_name=f"t{number} FAILED {arch_key}"[:250], tags=tags)
        self.client.log_text(run.info.run_id, error, "error.txt")
        if self.lm_tracing is not None:
            self.lm_tracing.link(self.client, run.info.run_id)
        self.client.set_terminated(run.info.run_id, status="FAILED")
        return run.info.run_id

    def log_trial(self, number: int, arch: Architecture, result: TrialResult, attrs: dict[str, Any],
                  round_: dict[str, Any] | None = None) -> str:
        from memarch.optimizers.tracking.run_context import trial_run_name

        tags = {**self.tags, "memarch.trial": str(number)}
        if self.parent_run_id:
            tags["mlflow.parentRunId"] = self.parent_run_id
        run = self.client.create_run(self.experiment_id, run_name=trial_run_name(number, arch.key()), tags=tags)
        rid = run.info.run_id
        if self._trial_inputs:  # every trial is scored on the search split
            self.client.log_inputs(rid, datasets=self._trial_inputs)
        if self.lm_tracing is not None:  # the DSPy traces made while this trial was evaluated
            self.client.set_tag(rid, "memarch.lm_traces", str(self.lm_tracing.link(self.client, rid)))
        from mlflow.entities import Metric, Param

        params = {"encode": "+".join(arch.encode), "store": arch.store, "retrieve": arch.retrieve,
                  "manage": arch.manage, "role": attrs.get("role", "") or "-", "edit": attrs.get("edit", "") or "-",
                  "parent": attrs.get("parent", "") or "-",  # lineage: the architecture the edit was applied to
                  "objective_name": result.metadata.get("metric", "") or "-"}  # the metric (its key in logged runs)
        # "objective": the trial's quality, the study's first objective (the key runs were logged with)
        metrics = {"objective": result.score, "latency_s": result.cost.get("latency_s", result.cost.get("wall_s", 0.0))}
        from memarch.optimizers.search.objectives import value_of

        # one metric per objective of the study (quality, memory_words, read_p95, ...)
        metrics.update({f"objective_{n}": value_of(result, n) for n in self.objectives})
        metrics.update({f"score_{k}": v for k, v in result.scores.items()})
        metrics.update({f"category_{k}": v for k, v in result.per_category.items()})
        metrics.update({f"cost_{k}": v for k, v in result.cost.items()})
        metrics.update({f"failures_{k}": v for k, v in result.attribution.items()})
        if result.lm_requests:  # LM answers per module and how many fell back to the LM-free path
            metrics.update({f"fallbacks_{k}": result.fallbacks.get(k, 0) for k in result.lm_requests})
            metrics.update({f"lm_requests_{k}": v for k, v in result.lm_requests.items()})
            metrics.update(fallbacks_total=sum(result.fallbacks.values()),
                           lm_requests_total=sum(result.lm_requests.values()))
        ts = 0
        self.client.log_batch(rid, metrics=[Metric(_metric_name(k), float(v), ts, number)
                                            for k, v in metrics.items()
                                            if isinstance(v, (int, float)) and math.isfinite(float(v))],
                              params=[Param(k, str(v)[:500]) for k, v in params.items()])
        self.client.log_dict(rid, arch.to_dict(), "architecture.json")
        from memarch.benchmarks.evaluation.diagnosis import diagnose

        self.client.log_dict(rid, diagnose(result).to_dict(), "diagnosis.json")
        if round_ and round_.get("gradient"):
            self.client.log_dict(rid, {"round": round_.get("round"), "gradient": round_["gradient"],
                                       "proposals": round_.get("proposals", [])}, "gradient.json")
        if round_ and "ledger" in round_:
            self.client.log_text(rid, json.dumps(round_["ledger"], indent=1), "ledger.json")
            self._ledger = round_["ledger"]
        self.client.set_terminated(rid)
        return rid

    def finish(self, summary: dict[str, Any] | None = None, curve_png: str | Path | None = None) -> None:
        if not self.parent_run_id:
            return
        from mlflow.entities import Metric

        summary = summary or {}
        if self.lm_tracing is not None:  # validation and test evaluations: the parent's traces
            self.lm_tracing.link(self.client, self.parent_run_id)
            summary = {**summary, "lm_traces_linked": self.lm_tracing.linked,
                       "lm_traces_not_linked": self.lm_tracing.failed_links}
            self.lm_tracing.close()
            self.lm_tracing = None
        nums = [Metric(_metric_name(k), float(v), 0, 0) for k, v in summary.items()
                if isinstance(v, (int, float)) and math.isfinite(float(v))]
        if nums:
            self.client.log_batch(self.parent_run_id, metrics=nums)
        if summary.get("test_failed"):  # a failed test evaluation: a tag and test_failed=1, never a 0.0 score
            self.client.set_tag(self.parent_run_id, "memarch.test_failed",
                                str(summary.get("test_error") or "failed")[:500])
        self.client.log_dict(self.parent_run_id, summary, "summary.json")
        if self._ledger is not None:
            self.client.log_dict(self.parent_run_id, {"ledger": self._ledger}, "ledger.json")
        if curve_png and Path(curve_png).exists():
            self.client.log_artifact(self.parent_run_id, str(curve_png))
        self.client.set_terminated(self.parent_run_id)


class _TrialLogger:
    """`Tracker.callback`: logs each finished trial of one worker (see there)."""

    def __init__(self, tracker: Tracker, search: Any = None):
        self.tracker = tracker
        self.search = search
        self.rounds_logged = 0
        self.counts = {"trials_invalid": 0, "trials_repeated": 0, "trials_failed": 0, "trials_evaluated": 0}

    def __call__(self, study: Any, trial: Any) -> None:
        from optuna.trial import TrialState

        from memarch.optimizers.samplers.base import report_of
        from memarch.optimizers.search.history import ARCH_ATTR, REPEAT_ATTR, RESULT_ATTR, expand, proposal_attr

        sampler = report_of(study.sampler)
        rounds = sampler.rounds
        for i in range(self.rounds_logged, len(rounds)):
            self.tracker.log_round(i, rounds[i])
        self.rounds_logged = len(rounds)
        attrs = trial.user_attrs
        if trial.state == TrialState.COMPLETE and REPEAT_ATTR in attrs:
            self.counts["trials_repeated"] += 1
        elif trial.state == TrialState.COMPLETE and RESULT_ATTR in attrs:
            self.counts["trials_evaluated"] += 1
            arch = Architecture.from_dict(attrs[ARCH_ATTR])
            round_ = sampler.round_of(trial.number)
            self.tracker.log_trial(trial.number, arch, expand(arch, attrs[RESULT_ATTR]),
                                   {"role": proposal_attr(trial, "role"), "edit": proposal_attr(trial, "edit"),
                                    "parent": proposal_attr(trial, "parent")},
                                   round_)
        elif trial.state == TrialState.PRUNED and "invalid" in attrs:
            self.counts["trials_invalid"] += 1
        elif trial.state == TrialState.FAIL:
            self.counts["trials_failed"] += 1
            key = Architecture.from_dict(attrs[ARCH_ATTR]).key() if ARCH_ATTR in attrs else "?"
            self.tracker.log_failed(trial.number, key, str(attrs.get("error", "unknown error")))
        counts = dict(self.counts)
        counts.update({f"sampler_{k}": v for k, v in sampler.stats().items()})
        self.tracker.log_counts(trial.number, counts)


def _experiment_by_name(client: Any, name: str, attempts: int = 5) -> Any:
    """The experiment (None if absent). The first call opens the store, which creates or migrates a new
    database: a SQLite store is opened under `store_lock`; another store (a server, another process
    not holding the lock) may still race there, and the loser sees "table ... already exists" or
    "duplicate column name"; it waits and retries."""
    import time

    for attempt in range(attempts):
        try:
            return client.get_experiment_by_name(name)
        except Exception as exc:
            text = str(exc)
            if attempt + 1 < attempts and ("already exists" in text or "duplicate column" in text):
                time.sleep(0.5 + attempt)
                continue
            raise

"""What the MLflow UI shows first for a study: the experiment's kind, a saved runs view (objective
and cost columns, best first) and the URLs that open it, as MLflow 3.17's web app reads them."""
from __future__ import annotations

import json
import logging
from typing import Any
from urllib.parse import quote, urlencode

logger = logging.getLogger(__name__)

KIND_TAG = "mlflow.experimentKind"
# "Machine learning" in the UI's kind picker: runs, not traces, are what a study has.
MACHINE_LEARNING = "custom_model_development"
# The web app's switch between its GenAI and ML layouts (query parameter, else the browser's
# localStorage, else GenAI). In 3.17 this switch, not KIND_TAG, picks the experiment's landing tab.
WORKFLOW_PARAM = ("workflowType", "machine_learning")
# A "shared view" is an experiment tag the runs table loads when the URL names its key; it is the
# only way to choose the table's columns from a URL (its own URL parameters cover sort and filters).
SHARED_VIEW_PREFIX = "mlflow.sharedViewState."
VIEW_KEY = "memarch-runs"


def column(kind: str, key: str) -> str:
    """The runs table's id of a column (``metrics.`objective```), as its bundle builds it."""
    return f"{kind}.`{key}`"


# the runs table's own first columns (ids from its bundle): name, created, duration
LEADING = (column("attributes", "Run Name"), "runDateAndNestInfo", "duration")
PARAMS = ("encode", "store", "retrieve", "manage")
# Trial costs first, then the parent run's summary; only keys some run has become columns.
COSTS = ("cost_memory_words", "cost_memory_tokens", "cost_read_p95_ms", "cost_lm_tokens", "cost_wall_s")  # memory_tokens: runs logged by earlier code
SUMMARY = ("validation_score", "test_score")


def runs_columns(metric_keys: set[str] | list[str], param_keys: set[str] | list[str] = PARAMS) -> list[str]:
    """Columns for a study's runs: objective, one per study objective, costs, summary scores,
    the architecture's four modules.

    Example::

        runs_columns({"objective", "objective_quality", "cost_memory_words"})[:2]
        # ['metrics.`objective`', 'metrics.`objective_quality`']
    """
    metrics = set(metric_keys)
    ordered = ["objective", *sorted(k for k in metrics if k.startswith("objective_")), *COSTS, *SUMMARY]
    cols = [column("metrics", k) for k in ordered if k in metrics]
    # MLflow's default Source/Models/Dataset columns are left out: wide, and they push the
    # metrics off screen beside the assistant panel (the Columns menu brings them back).
    return cols + [column("params", k) for k in PARAMS if k in set(param_keys)]


def view_state(metric_keys, param_keys=PARAMS) -> dict[str, Any]:
    """The shared view: the columns above, sorted by objective, best first. Sorting by a metric
    also lists trial runs beside their parent instead of folded under it."""
    cols = runs_columns(metric_keys, param_keys)
    # the table sorts a group's columns by name unless told: objective first, as listed
    return {"orderByKey": column("metrics", "objective"), "orderByAsc": False, "selectedColumns": cols,
            "columnOrder": [*LEADING, *cols]}


def mark_experiment(client: Any, experiment_id: str, tags: dict[str, str] | None = None) -> bool:
    """Tag the experiment as machine learning unless ``tags`` (its current ones) already say so.
    A tracker calls it on create and reuse; a failure (two workers racing on SQLite) is logged, not
    raised: the tag only chooses the UI's layout. True when the tag is in place."""
    if tags is not None and tags.get(KIND_TAG) == MACHINE_LEARNING:
        return True
    try:
        client.set_experiment_tag(experiment_id, KIND_TAG, MACHINE_LEARNING)
        return True
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else ""
        logger.warning("could not tag experiment %s as %s (%s: %s); `memarch ui` tags it again",
                       experiment_id, MACHINE_LEARNING, type(exc).__name__, first)
        return False


def write_runs_view(client: Any, experiment_id: str, *, key: str = VIEW_KEY, max_runs: int = 500) -> dict:
    """Store the runs view for the keys the experiment's runs log (its latest ``max_runs``)."""
    metrics: set[str] = set()
    params: set[str] = set()
    for run in client.search_runs([experiment_id], max_results=max_runs, order_by=["attributes.start_time DESC"]):
        metrics.update(run.data.metrics)
        params.update(run.data.params)
    state = view_state(metrics, params)
    mark_experiment(client, experiment_id)
    client.set_experiment_tag(experiment_id, SHARED_VIEW_PREFIX + key, json.dumps(state))
    return state


def runs_url(base: str, experiment_id: str, *, key: str | None = VIEW_KEY) -> str:
    """The experiment's runs table in the ML layout, with the shared view when ``key`` is given."""
    query = dict([WORKFLOW_PARAM] + ([("viewStateShareKey", key)] if key else []))
    return f"{base.rstrip('/')}/#/experiments/{experiment_id}/runs?{urlencode(query)}"


def artifact_url(base: str, experiment_id: str, run_id: str, path: str) -> str:
    """One artifact of a run, opened in the run page's artifact viewer."""
    return (f"{base.rstrip('/')}/#/experiments/{experiment_id}/runs/{run_id}/artifacts/{quote(path)}"
            f"?{urlencode(dict([WORKFLOW_PARAM]))}")

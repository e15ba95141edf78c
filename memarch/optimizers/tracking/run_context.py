"""What an MLflow run of a study was measured on: readable run names, tags (benchmark, data hash,
split sizes, memarch version and git commit, strategy, metric) and each benchmark split as an
MLflow dataset input, so the UI's columns and comparisons say what a number is."""
from __future__ import annotations

import logging
import subprocess
import warnings
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

SPLITS = ("search", "validation", "test")


def parent_run_name(strategy: str, seed: Any) -> str:
    """``"guided s0"``: the strategy and seed of a study's parent run (the study name is a tag)."""
    return f"{strategy} s{seed}" if seed is not None else str(strategy)


def trial_run_name(number: int, key: str) -> str:
    """``"t12 turn+event|vector|hybrid|lightweight"`` (MLflow keeps at most 250 characters)."""
    return f"t{number} {key}"[:250]


def git_commit(path: Path | None = None) -> tuple[str, bool] | None:
    """(commit, has uncommitted changes to tracked files) of the checkout memarch runs from, or
    None when it is not a git checkout (an installed package) or git is missing."""
    where = path or Path(__file__).resolve().parents[3]
    try:
        head = subprocess.run(["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=5)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip(), bool(dirty.stdout.strip())


def _benchmark(evaluator: Any) -> Any:
    return evaluator.benchmark if evaluator is not None else None


def metric_name(evaluator: Any) -> str | None:
    """The metric an evaluator's results score (None for one that does not say)."""
    return (evaluator.metric or None) if evaluator is not None else None


def split_view(evaluator: Any, split: str) -> Any:
    """The part of the benchmark an evaluator scores on ``split`` (its ``limit`` applied)."""
    return _benchmark(evaluator).split(split).limit(evaluator.limit)


def split_rows(view: Any) -> list[dict[str, Any]]:
    """One row per question (conversations) or task (agent benchmarks) of a split view."""
    from memarch.benchmarks.base import COLLECT_DEPLOY

    if view.protocol == COLLECT_DEPLOY:
        collect, _deploy = view.phases()
        kept = {t.id for t in collect}
        return [{"task_id": t.id, "task": t.text, "namespace": t.namespace,
                 "phase": "collect" if t.id in kept else "deploy"} for t in view.tasks]
    return [{"dialogue": d.namespace, "question_id": q.id, "question": q.text, "answer": q.answer or "",
             "category": q.category, "evidence": ",".join(q.evidence)}
            for d in view.dialogues for q in d.questions]


def run_tags(evaluator: Any, *, strategy: str | None = None, seed: Any = None) -> dict[str, str]:
    """Tags of every run of a study: what is absent was not known (an evaluator without a benchmark
    has no benchmark tags; outside a git checkout there is no ``memarch.git_commit``)."""
    from memarch._version import __version__

    tags = {"memarch.version": __version__}
    commit = git_commit()
    if commit is not None:
        tags["memarch.git_commit"] = commit[0]
        tags["memarch.git_dirty"] = str(commit[1]).lower()
    if strategy is not None:
        tags["memarch.strategy"] = str(strategy)
    if seed is not None:
        tags["memarch.seed"] = str(seed)
    metric = metric_name(evaluator)
    if metric:
        tags["memarch.objective"] = metric  # the metric: the tag's name in runs already logged
    bench = _benchmark(evaluator)
    if bench is None:
        return tags
    from memarch.pipeline.evaluation_record import data_sha256

    tags["memarch.benchmark"] = bench.name
    path = bench.path
    if path is not None:
        tags["memarch.data"] = str(Path(path).resolve())
        tags["memarch.data_sha256"] = data_sha256(path) or "unreadable"
    limit = evaluator.limit
    if limit is not None:
        tags["memarch.limit"] = str(limit)
    tags["memarch.split_by"] = bench.split_unit
    for split in SPLITS:
        tags[f"memarch.split.{split}"] = str(len(split_rows(split_view(evaluator, split))))
    return tags


def split_datasets(evaluator: Any, splits: tuple[str, ...] = SPLITS) -> list[Any]:
    """Each split as an MLflow `DatasetInput` (context tag = the split's name); [] for an evaluator
    without a benchmark."""
    import mlflow.data
    import pandas as pd
    from mlflow.entities import DatasetInput, InputTag

    bench = _benchmark(evaluator)
    if bench is None:
        return []
    path = bench.path
    out = []
    for split in splits:
        rows = split_rows(split_view(evaluator, split))
        with warnings.catch_warnings():
            # a local path matches MLflow's two local-file source types (it picks the same one), and
            # its digest code trips a pandas 4 deprecation: neither is ours to act on
            warnings.filterwarnings("ignore", message=".*(interpreted in multiple ways|keyword-only).*")
            dataset = mlflow.data.from_pandas(pd.DataFrame(rows), name=f"{bench.name}-{split}",
                                              source=str(Path(path).resolve()) if path is not None else None,
                                              targets="answer" if rows and "answer" in rows[0] else None)
        out.append(DatasetInput(dataset._to_mlflow_entity(), tags=[InputTag("mlflow.data.context", split)]))
    return out

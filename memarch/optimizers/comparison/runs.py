"""The runs of a comparison — one compile per (strategy, seed) — one after the other, or side by side
in ``workers`` forked processes (each run is its own study and seed, so its result is the one it
would have alone: only the wall time and the evaluation cache's sharing change)."""
from __future__ import annotations

import logging
import multiprocessing
import queue as queue_module
import threading
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable

from memarch.errors import MemarchError
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.trial import TrialResult

logger = logging.getLogger(__name__)

Job = tuple[str, int]  # (strategy, seed)
RunOne = Callable[[Job, Any], Any]  # (job, on_trial) -> CompileReport

# What a forked worker runs: set in the parent before the pool forks, read in the child (fork copies
# it), so nothing of the evaluator (open caches, loaded models) has to be pickled.
_CHILD: dict[str, Any] = {}


def run_jobs(jobs: list[Job], run_one: RunOne, *, workers: int = 1, on_trial: Callable | None = None) -> list[Any]:
    """Each job's report, in ``jobs`` order."""
    if workers < 1:
        raise MemarchError(f"workers must be at least 1, got {workers}")
    if workers == 1 or len(jobs) < 2:
        return [run_one(job, on_trial) for job in jobs]
    if "fork" not in multiprocessing.get_all_start_methods():
        raise MemarchError("workers > 1 forks worker processes, which this platform cannot do")
    return _side_by_side(jobs, run_one, min(workers, len(jobs)), on_trial)


def _side_by_side(jobs: list[Job], run_one: RunOne, workers: int, on_trial: Callable | None) -> list[Any]:
    ctx = multiprocessing.get_context("fork")
    events = ctx.Queue()
    _CHILD.update(run_one=run_one, events=events if on_trial is not None else None)
    stop = threading.Event()
    relay = threading.Thread(target=_relay, args=(events, on_trial, stop), daemon=True) if on_trial else None
    if relay is not None:
        relay.start()
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            futures = [pool.submit(_child, job) for job in jobs]
            return [f.result() for f in futures]
    finally:
        stop.set()
        if relay is not None:
            relay.join(timeout=5)
        _CHILD.clear()


def _child(job: Job) -> Any:
    """One job in a forked worker; its trials reported to the parent's ``on_trial`` through a queue."""
    import faiss

    faiss.omp_set_num_threads(1)  # each worker one core: the workers are the parallelism
    events = _CHILD["events"]
    return _CHILD["run_one"](job, _forwarder(events) if events is not None else None)


def _forwarder(events: Any) -> Callable[[int, Architecture, TrialResult], None]:
    def forward(number: int, arch: Architecture, result: TrialResult) -> None:
        events.put((number, arch.to_dict(), _progress_fields(result)))

    return forward


def _progress_fields(result: TrialResult) -> dict[str, Any]:
    """What a progress callback reads of a result (the outcomes stay in the worker)."""
    return {"benchmark": result.benchmark, "split": result.split, "score": result.score,
            "cost": {k: v for k, v in result.cost.items() if k.startswith("embeddings_")},
            "metadata": {k: v for k, v in result.metadata.items() if k in ("instances", "metric")}}


def _relay(events: Any, on_trial: Callable, stop: threading.Event) -> None:
    """Hand the workers' trial events to ``on_trial`` in the parent, until the runs are done."""
    while not stop.is_set() or not events.empty():
        try:
            number, arch, fields = events.get(timeout=0.2)
        except queue_module.Empty:
            continue
        except (EOFError, OSError):  # the queue was closed with the pool
            return
        try:
            on_trial(number, Architecture.from_dict(arch), TrialResult(Architecture.from_dict(arch), **fields))
        except Exception:  # a progress bar must not stop the runs
            logger.debug("on_trial raised", exc_info=True)

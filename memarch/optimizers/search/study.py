"""Optuna studies for the search: storage URLs (sqlite by default, PostgreSQL for many machines),
heartbeats so a killed worker's trial is failed and retried, and resume with a space check."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import optuna
from optuna.storages import RDBStorage, RetryHeartbeatStaleTrialCallback

from memarch.errors import MemarchError
from memarch.pipeline import sqlite_wal
from memarch.optimizers.search.objectives import SINGLE, directions, saved_objectives

logger = logging.getLogger(__name__)

DEFAULT_STORAGE = "sqlite:///mlruns/optuna.db"
SPACE_ATTR = "memarch_space"
OBJECTIVES_ATTR = "memarch_objectives"


def check_storage_url(url: str | None) -> None:
    """Refuse a storage URL memarch cannot open, before any work starts."""
    if url in (None, "", ":memory:") or url.startswith(("sqlite:///", "postgresql", "postgres:", "mysql")):
        return
    raise MemarchError(f"unsupported --storage {url!r}: use sqlite:///PATH or postgresql://...")


def make_storage(url: str | None = DEFAULT_STORAGE, *, heartbeat_interval: int = 10,
                 grace_period: int | None = None, max_retry: int = 2) -> optuna.storages.BaseStorage:
    """An RDB storage with heartbeat and retry of crashed trials, or in-memory for ``None``/":memory:".

    Example::

        storage = make_storage("postgresql://memarch@127.0.0.1:5432/memarch", heartbeat_interval=5)

    A trial whose worker stops beating for ``grace_period`` seconds (default 2 x interval) is marked
    FAIL by the next worker and re-enqueued with the same params (up to ``max_retry`` times).
    """
    check_storage_url(url)
    if url in (None, "", ":memory:"):
        return optuna.storages.InMemoryStorage()
    if url.startswith("sqlite:///"):
        Path(url[len("sqlite:///"):]).expanduser().parent.mkdir(parents=True, exist_ok=True)
        sqlite_wal.install()  # WAL, NORMAL sync: a commit without fsyncs, safe against a crashed process
        # Several processes on one sqlite file: wait for the write lock instead of failing.
        engine_kwargs: dict[str, Any] = {"connect_args": {"timeout": 60}}
    elif url.startswith(("postgresql", "postgres:", "mysql")):
        # SQLAlchemy 2.1 defaults to psycopg 3; the installed driver is psycopg2.
        for plain in ("postgresql://", "postgres://"):
            if url.startswith(plain):
                url = "postgresql+psycopg2://" + url[len(plain):]
        engine_kwargs = {"pool_pre_ping": True}
    import time
    import warnings

    for attempt in range(5):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # heartbeat and its retry callback are "experimental"
                return RDBStorage(url, engine_kwargs=engine_kwargs, heartbeat_interval=heartbeat_interval,
                                  grace_period=grace_period or 2 * heartbeat_interval,
                                  heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(max_retry=max_retry))
        except Exception as exc:  # sqlalchemy / driver errors: one line for the user
            # Workers starting together race to create the schema; the loser retries (SQLite says
            # "table ... already exists" when another process created it between check and create).
            if attempt < 4 and ("IntegrityError" in type(exc).__name__ or "locked" in str(exc)
                                or "already exists" in str(exc)):
                time.sleep(0.5 + attempt)
                continue
            raise MemarchError(f"cannot open study storage {url}: {type(exc).__name__}: "
                               f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
    raise MemarchError(f"cannot open study storage {url}")


def open_study(name: str, storage: optuna.storages.BaseStorage, sampler: optuna.samplers.BaseSampler, *,
               space: dict, resume: bool = False, attrs: dict | None = None,
               objectives: tuple[str, ...] | list[str] = SINGLE,
               pruner: optuna.pruners.BasePruner | None = None) -> optuna.Study:
    """Create ``name``, or continue it when ``resume``; a resumed study must search the same space
    for the same objectives (``("quality",)``, or quality and costs: a multi-objective study).

    Several workers join one study by all passing ``resume=True``.
    """
    objectives = list(objectives)
    existing = set(optuna.study.get_all_study_names(storage))
    if name in existing and not resume:
        raise MemarchError(f"study {name!r} already exists; pass --resume to continue it or use another --study-name")
    study = optuna.create_study(study_name=name, storage=storage, sampler=sampler, pruner=pruner,
                                directions=directions(objectives), load_if_exists=True)
    stored = study.user_attrs.get(SPACE_ATTR)
    if stored is None:
        study.set_user_attr(SPACE_ATTR, space)
        study.set_user_attr(OBJECTIVES_ATTR, objectives)
        for k, v in (attrs or {}).items():
            study.set_user_attr(k, v)
    elif stored != space:
        raise MemarchError(f"study {name!r} was created for another space ({stored.get('family')}, "
                           f"{len(stored.get('retrievers', []))} retrievers); use a new --study-name")
    # a study from before objectives were stored optimised quality alone
    had = list(saved_objectives(study.user_attrs.get(OBJECTIVES_ATTR) or SINGLE))
    if had != objectives:
        raise MemarchError(f"study {name!r} was created for --objectives {','.join(had)}, not "
                           f"{','.join(objectives)}; resume it with those or use a new --study-name")
    if name in existing:
        logger.info("resuming study %s with %d trials", name, len(study.trials))
    return study


def study_objectives(study: optuna.Study) -> tuple[str, ...]:
    """The objectives a memarch study was created for (quality alone for a study without the attr)."""
    return saved_objectives(study.user_attrs.get(OBJECTIVES_ATTR) or SINGLE)


def fail_stale(study: optuna.Study) -> None:
    """Fail (and so retry) trials whose worker died; a no-op without heartbeat."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        optuna.storages.fail_stale_trials(study)
        _fail_heartbeatless(study)


def _fail_heartbeatless(study: optuna.Study) -> None:
    """Optuna never fails a RUNNING trial that has no heartbeat row — a worker killed between
    ``ask`` and its first heartbeat leaves one behind forever. Treat such a trial as stale once it
    is three grace periods old (a live worker writes its first heartbeat at once)."""
    import datetime

    from optuna.trial import TrialState

    from memarch.optimizers.search import optuna_internals as internals

    backend = internals.rdb_backend(study)
    if backend is None or backend.heartbeat_interval is None:
        return
    grace = backend.grace_period or 2 * backend.heartbeat_interval
    now = datetime.datetime.now()
    old = [t for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
           if t.datetime_start and (now - t.datetime_start).total_seconds() > 3 * grace]
    if not old:
        return
    beating = internals.heartbeat_trial_ids(backend, [internals.trial_id(t) for t in old])
    callback = backend.get_heartbeat_stale_trial_callback()
    storage = internals.storage_of(study)
    for t in old:
        if internals.trial_id(t) in beating:
            continue
        try:
            if storage.set_trial_state_values(internals.trial_id(t), state=TrialState.FAIL):
                logger.warning("trial %d never sent a heartbeat (its worker died); failed and retried", t.number)
                if callback is not None:
                    callback(study, storage.get_trial(internals.trial_id(t)))
        except optuna.exceptions.UpdateFinishedTrialError:
            pass  # another worker got there first

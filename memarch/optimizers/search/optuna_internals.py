"""The only place memarch touches Optuna's private API. Each use is one small function, and
tests/optimizers/search/test_optuna_internals.py fails loudly when an Optuna upgrade moves any of them."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import optuna
    from optuna.trial import FrozenTrial


def storage_of(study: "optuna.Study") -> Any:
    """The study's storage (``Study._storage``; Optuna exposes no public accessor)."""
    return study._storage


def set_trial_system_attr(study: "optuna.Study", trial: "FrozenTrial", key: str, value: Any) -> None:
    """Annotate a trial from inside a sampler, as Optuna's own samplers do (``trial._trial_id``)."""
    storage_of(study).set_trial_system_attr(trial._trial_id, key, value)


def trial_id(trial: "FrozenTrial") -> int:
    return trial._trial_id


def rdb_backend(study: "optuna.Study") -> Any:
    """The RDBStorage behind a study (heartbeat storages wrap it in ``_backend``), else None."""
    from optuna.storages import RDBStorage

    storage = storage_of(study)
    backend = getattr(storage, "_backend", storage)
    return backend if isinstance(backend, RDBStorage) else None


def heartbeat_trial_ids(backend: Any, trial_ids: list[int]) -> set[int]:
    """Trial ids that have a heartbeat row (``optuna.storages._rdb.models``)."""
    from optuna.storages._rdb import models

    session = backend.scoped_session()
    try:
        return {tid for (tid,) in session.query(models.TrialHeartbeatModel.trial_id).filter(
            models.TrialHeartbeatModel.trial_id.in_(trial_ids)).all()}
    finally:
        session.close()


def whole_study(study: "optuna.Study") -> "optuna.Study":
    """The study itself when `HyperbandPruner` hands a sampler one bracket's view of it (a private
    ``_BracketStudy`` that refuses ``user_attrs`` and the other trials): memarch's samplers read
    the whole history, whatever bracket a trial is in."""
    if type(study).__name__ == "_BracketStudy":
        return object.__getattribute__(study, "_study")
    return study

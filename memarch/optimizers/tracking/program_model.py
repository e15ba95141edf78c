"""A saved `MemoryProgram` as an MLflow pyfunc model: the program JSON is the model's only artifact
(never a pickle), the class is loaded from code, and ``predict`` reads a saved memory for queries."""
from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Any, Optional

import mlflow.pyfunc
import pydantic

from memarch.errors import DataError, MemarchError

logger = logging.getLogger(__name__)

MODEL_NAME = "program"  # the LoggedModel's name: `runs:/<run>/program` is not used in MLflow 3
ARTIFACT = "program"  # context.artifacts key of the program JSON
CODE = Path(__file__).with_name("program_model_code.py")  # the models-from-code entry point
COLUMNS = ("query", "namespace", "user_id", "top_k")


class QueryRow(pydantic.BaseModel):
    """One query to the model (MLflow derives the model's input schema from this type)."""

    # Optional[...] rather than "X | None": the form MLflow's type-hint schema inference reads.
    query: str
    namespace: Optional[str] = None
    user_id: Optional[str] = None  # the namespace's other name
    top_k: Optional[int] = None


class ProgramModel(mlflow.pyfunc.PythonModel):
    """The pyfunc model of a memarch program: answers queries from the memory it is loaded with.

    Example::

        info = log_program_model(program, tracking_uri="sqlite:///mlruns/mlflow.db", run_id=run_id)
        model = mlflow.pyfunc.load_model(info.model_uri, model_config={"memory": "mem.program.json"})
        model.predict([{"query": "where did Caroline move from?", "user_id": "conv-26"}])

    Input: a list of dicts (or a DataFrame) with a ``query`` string and optional
    ``namespace`` (or its alias ``user_id``: one user's memory is one namespace; default
    ``"default"``) and ``top_k`` (default: the program's).
    Output: one dict per query: ``query``, ``namespace``, ``context`` (the text a reader gets, cut
    to the program's context budget), ``items`` (rank order: ``id``, ``text``, ``kind``, ``score``,
    ``episode_id``, ``event_time``, ``source_ids``) and ``memory_items`` (active items in that
    namespace, so an empty memory is visible, not silent).

    The memory is the logged program's own (``log_program_model(..., include_memory=True)``) or,
    when ``model_config={"memory": PATH}`` is given at load, the memory of the saved program at
    PATH (``MemoryProgram.save(PATH)``), which must have the same architecture and embedder.
    """

    def load_context(self, context: Any) -> None:
        from memarch.pipeline.program import MemoryProgram

        source = context.artifacts[ARTIFACT]
        self.program = MemoryProgram.load(source)
        memory = (context.model_config or {}).get("memory")
        if memory:
            attach_memory(self.program, memory)
        if not self.program.store.namespaces():
            logger.warning("memarch model: the program has no memory; every query returns no items "
                           "(load with model_config={'memory': 'saved.program.json'})")

    # No return annotation: MLflow would turn ``dict[str, Any]`` into an unvalidated schema and
    # warn; the output is documented above.
    def predict(self, context, model_input: list[QueryRow], params: dict[str, Any] | None = None):
        from memarch.pipeline.episodes import Query

        out = []
        for row in query_rows(model_input):
            r = self.program.read(Query(text=row["query"], namespace=row["namespace"]), top_k=row["top_k"])
            out.append({"query": row["query"], "namespace": row["namespace"], "context": r.context,
                        "items": [{"id": s.item.id, "text": s.item.text, "kind": s.item.kind,
                                   "score": float(s.score), "episode_id": s.item.episode_id,
                                   "event_time": s.item.event_time, "source_ids": list(s.item.source_ids)}
                                  for s in r.items],
                        "memory_items": self.program.store.count(row["namespace"])})
        return out


def attach_memory(program: Any, path: str | Path) -> None:
    """Load the memory of the saved program at ``path`` into ``program`` (same architecture and
    embedder, or one `DataError` line)."""
    from memarch.pipeline.files import read_json
    from memarch.pipeline.program import FORMAT

    data = read_json(path, what="saved memarch program with its memory")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise DataError(f"{path}: not a saved memarch program (expected format {FORMAT!r})")
    if not data.get("memory"):
        raise DataError(f"{path}: the saved program has no memory (save it with include_memory=True)")
    from memarch.pipeline.architecture import Architecture

    theirs = Architecture.from_dict(data["architecture"]).canonical().key()
    if theirs != program.architecture.key():
        raise DataError(f"{path}: memory written by {theirs}, but the model is {program.architecture.key()}")
    if data.get("embedder") != program.resources.embedder.model:
        raise DataError(f"{path}: memory embedded with {data.get('embedder')!r}, "
                        f"the model embeds with {program.resources.embedder.model!r}")
    program.store.load_state(data["memory"])
    program.episodes_written = dict(data.get("episodes_written") or {})


def query_rows(model_input: Any) -> list[dict[str, Any]]:
    """Normalise a predict input to ``[{"query", "namespace", "top_k"}]`` (see `ProgramModel`)."""
    import pandas as pd

    if isinstance(model_input, (list, tuple)):  # MLflow hands over `QueryRow`s
        model_input = [r.model_dump() if isinstance(r, pydantic.BaseModel) else r for r in model_input]
    if isinstance(model_input, pd.DataFrame):
        rows = model_input.to_dict(orient="records")
    elif isinstance(model_input, str):
        rows = [{"query": model_input}]
    elif isinstance(model_input, dict):
        rows = [model_input]
    elif isinstance(model_input, (list, tuple)):
        rows = [{"query": r} if isinstance(r, str) else r for r in model_input]
    else:
        raise MemarchError(f"memarch model input: expected a DataFrame or a list of dicts with a 'query', "
                           f"not {type(model_input).__name__}")
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or not isinstance(row.get("query"), str) or not row["query"].strip():
            raise MemarchError(f"memarch model input row {i}: needs a non-empty 'query' string")
        unknown = sorted(set(row) - set(COLUMNS))
        if unknown:
            raise MemarchError(f"memarch model input row {i}: unknown column {unknown[0]!r}; "
                               f"expected {', '.join(COLUMNS)}")
        ns, user = _given(row.get("namespace")), _given(row.get("user_id"))
        if ns is not None and user is not None and str(ns) != str(user):
            raise MemarchError(f"memarch model input row {i}: namespace {ns!r} and user_id {user!r} differ "
                               "(user_id is the namespace's other name)")
        top_k = _given(row.get("top_k"))
        if top_k is not None and (isinstance(top_k, bool) or int(top_k) != top_k or top_k < 1):
            raise MemarchError(f"memarch model input row {i}: top_k must be a positive integer, not {top_k!r}")
        out.append({"query": row["query"], "namespace": str(ns if ns is not None else user if user is not None
                                                            else "default"),
                    "top_k": None if top_k is None else int(top_k)})
    return out


def _given(value: Any) -> Any:
    """None for a missing cell (a DataFrame fills optional columns with None or NaN)."""
    return None if value is None or (isinstance(value, float) and value != value) else value


def log_program_model(program: Any, *, tracking_uri: str, run_id: str | None = None,
                      registered_name: str | None = None, include_memory: bool = False) -> Any:
    """Log ``program`` as a pyfunc model of run ``run_id`` (and register it as ``registered_name``);
    returns MLflow's `ModelInfo` (``model_uri``, ``model_id``, ``registered_model_version``).

    Example::

        info = log_program_model(program, tracking_uri=uri, run_id=run_id, registered_name="chat-memory")
        mlflow.pyfunc.load_model(f"models:/chat-memory/{info.registered_model_version}")
    """
    import warnings

    import mlflow

    with tempfile.TemporaryDirectory(prefix="memarch-model-") as tmp, warnings.catch_warnings():
        # The input schema comes from `QueryRow`; MLflow's advice to add an input example (which
        # it would check by loading the model, embedder and all, at every compile) does not apply.
        warnings.filterwarnings("ignore", message=".*input example.*", category=UserWarning)
        path = program.save(Path(tmp) / "program.json", include_memory=include_memory)
        # MLflow's log_model reads the process-wide tracking URI and the active run (the model's
        # experiment is the run's); the tracker logs through its own client, so both are set here.
        with _tracking_uri(tracking_uri), (mlflow.start_run(run_id=run_id, nested=True) if run_id else _nothing()):
            return mlflow.pyfunc.log_model(
                name=MODEL_NAME, python_model=str(CODE), artifacts={ARTIFACT: str(path)},
                registered_model_name=registered_name, pip_requirements=_requirements(),
                model_config={"memory": ""},  # declared, so load_model(uri, model_config={"memory": PATH}) is accepted
                tags={"memarch.architecture": program.architecture.key()})


def _requirements() -> list[str]:
    """memarch itself (the model's code is imported from it) and the MLflow it was logged with."""
    import mlflow

    from memarch._version import __version__

    return [f"memarch=={__version__}", f"mlflow=={mlflow.__version__}"]


class _nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


class _tracking_uri:
    """Use ``uri`` as MLflow's process-wide tracking URI inside the block, then restore it; MLflow's
    artifact progress bars (one per model file copied) are off meanwhile, not to break the CLI's lines."""

    BAR = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"

    def __init__(self, uri: str):
        self.uri = uri

    def __enter__(self):
        import os

        import mlflow

        self.old = mlflow.get_tracking_uri() if mlflow.is_tracking_uri_set() else None
        self.old_bar = os.environ.get(self.BAR)
        os.environ[self.BAR] = "false"
        mlflow.set_tracking_uri(self.uri)

    def __exit__(self, *exc):
        import os

        import mlflow

        mlflow.set_tracking_uri(self.old)  # None: back to "not set" (MLflow's default resolution)
        if self.old_bar is None:
            os.environ.pop(self.BAR, None)
        else:
            os.environ[self.BAR] = self.old_bar
        return False


def register_program_model(model_uri: str, name: str, *, tracking_uri: str) -> str:
    """Register a logged program model as a new version of ``name``; returns ``models:/name/N``."""
    import mlflow

    with _tracking_uri(tracking_uri):
        try:
            version = mlflow.register_model(model_uri, name)
        except Exception as exc:  # a bad name, a store without a registry, ...
            raise MemarchError(f"cannot register {model_uri} as {name!r}: {type(exc).__name__}: "
                               f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
    return f"models:/{name}/{version.version}"

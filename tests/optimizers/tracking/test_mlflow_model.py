"""The compiled program as an MLflow pyfunc model (round trip, registry), readable run names, tags
and dataset inputs, and DSPy traces linked to the trial runs — on a tmp sqlite store."""
from __future__ import annotations

import mlflow
import pandas as pd
import pytest

from memarch.cli import main
from memarch.errors import DataError, MemarchError
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.episodes import Episode, Turn
from memarch.pipeline.program import MemoryProgram
from memarch.optimizers.tracking.program_model import _tracking_uri as using  # MLflow's process-wide URI, restored after

TURNS = Architecture(("turn",), "vector", "hybrid", "lightweight")
TINY = ["--benchmark", "generated", "--knob", "conversations=1", "--knob", "sessions=3", "--limit", "6",
        "--embedder", "hash", "--storage", "memory"]


def _program(resources) -> MemoryProgram:
    program = MemoryProgram(TURNS, resources=resources)
    program.write(Episode(id="c/s1", namespace="ann", turns=[
        Turn("D1:1", "Ann", "My dog is called Rex.", date="2023-05-08"),
        Turn("D1:2", "Bo", "Nice, I have a cat named Tom.", date="2023-05-08")]))
    return program


@pytest.fixture(scope="module")
def empty_store(tmp_path_factory):
    """An MLflow sqlite store with its tables made once (the migrations take seconds): each test
    gets a copy."""
    from mlflow.tracking import MlflowClient

    path = tmp_path_factory.mktemp("store") / "mlflow.db"
    MlflowClient(f"sqlite:///{path}").search_experiments()
    return path


@pytest.fixture
def store_uri(empty_store, tmp_path):
    import sqlite3

    # SQLite's backup API: the store is in WAL mode and still open, so its newest pages may be in
    # mlflow.db-wal — a plain file copy of mlflow.db would miss them.
    src, dst = sqlite3.connect(empty_store), sqlite3.connect(tmp_path / "mlflow.db")
    try:
        src.backup(dst)
    finally:
        src.close(), dst.close()
    return f"sqlite:///{tmp_path}/mlflow.db"


@pytest.fixture
def tracker(store_uri, tmp_path):
    from memarch.optimizers.tracking.tracker import Tracker

    return Tracker(store_uri, artifact_root=tmp_path / "artifacts")


def _run(tracker) -> str:
    return tracker.client.create_run(tracker.experiment_id, run_name="compile").info.run_id


def test_pyfunc_round_trip_answers_from_the_saved_memory(tracker, hash_resources):
    from memarch.optimizers.tracking.program_model import log_program_model

    run_id = _run(tracker)
    info = log_program_model(_program(hash_resources), tracking_uri=tracker.tracking_uri, run_id=run_id,
                             include_memory=True)
    assert tracker.client.get_run(run_id).outputs.model_outputs[0].model_id == info.model_id
    with using(tracker.tracking_uri):
        model = mlflow.pyfunc.load_model(info.model_uri)
    [hit] = model.predict([{"query": "what is the dog called?", "user_id": "ann"}])
    assert hit["namespace"] == "ann" and hit["memory_items"] == 2
    assert "Rex" in hit["items"][0]["text"] and "Rex" in hit["context"] and hit["items"][0]["source_ids"] == ["D1:1"]
    [one] = model.predict(pd.DataFrame([{"query": "the cat?", "namespace": "ann", "top_k": 1}]))
    assert len(one["items"]) == 1
    [other] = model.predict([{"query": "what is the dog called?"}])  # not Ann's namespace: nothing of hers
    assert other["namespace"] == "default" and other["items"] == [] and other["memory_items"] == 0
    with pytest.raises(Exception, match="query"):  # MLflow's schema check of the signature
        model.predict([{"namespace": "ann"}])
    with pytest.raises(MemarchError, match="needs a non-empty 'query'"):
        model.predict([{"query": " "}])
    with pytest.raises(MemarchError, match="differ"):
        model.predict([{"query": "q", "namespace": "a", "user_id": "b"}])


def test_the_memory_can_be_given_at_load(tracker, hash_resources, tmp_path):
    from memarch.optimizers.tracking.program_model import log_program_model

    compiled = MemoryProgram(TURNS, resources=hash_resources)  # as compile logs it: no memory
    info = log_program_model(compiled, tracking_uri=tracker.tracking_uri, run_id=_run(tracker),
                             registered_name="chat-memory")
    assert info.registered_model_version == 1
    saved = _program(hash_resources).save(tmp_path / "mem.program.json")
    with using(tracker.tracking_uri):
        [empty] = mlflow.pyfunc.load_model(info.model_uri).predict([{"query": "dog?", "user_id": "ann"}])
        assert empty["memory_items"] == 0 and empty["items"] == []
        model = mlflow.pyfunc.load_model("models:/chat-memory/1", model_config={"memory": str(saved)})
        [hit] = model.predict([{"query": "what is the dog called?", "user_id": "ann"}])
        assert "Rex" in hit["items"][0]["text"]
        other = MemoryProgram(Architecture(("turn",), "json", "hybrid", "lightweight"), resources=hash_resources)
        other.write(Episode(id="x", namespace="ann", turns=[Turn("D1:1", "Ann", "hello", date="2023-05-08")]))
        with pytest.raises(DataError, match="memory written by turn|json"):
            mlflow.pyfunc.load_model(info.model_uri, model_config={"memory": str(other.save(tmp_path / "o.json"))})


def test_the_model_artifact_is_json_and_code_never_a_pickle(tracker, hash_resources, tmp_path):
    from memarch.optimizers.tracking.program_model import log_program_model

    info = log_program_model(_program(hash_resources), tracking_uri=tracker.tracking_uri, run_id=_run(tracker))
    with using(tracker.tracking_uri):
        local = mlflow.artifacts.download_artifacts(info.model_uri, dst_path=str(tmp_path / "model"))
    from pathlib import Path

    files = {p.name for p in Path(local).rglob("*") if p.is_file()}
    assert "program.json" in files and "program_model_code.py" in files
    assert not [f for f in files if f.endswith((".pkl", ".pickle", ".cloudpickle"))], files
    assert "memarch==" in (Path(local) / "requirements.txt").read_text()
    signature = (Path(local) / "MLmodel").read_text().split("signature:")[1]
    assert '"query"' in signature and '"user_id"' in signature  # from QueryRow


def test_compile_names_tags_and_dataset_inputs_and_registers_the_model(store_uri, tmp_path, capsys):
    from mlflow.tracking import MlflowClient

    from memarch.optimizers.tracking.run_context import git_commit

    uri = store_uri
    assert main(["compile", *TINY, "--budget", "2", "--tracking-uri", uri, "--out", str(tmp_path),
                 "--register", "chat-memory"]) == 0
    out = capsys.readouterr().out
    assert "MLflow model: models:/m-" in out and "registered as models:/chat-memory/1" in out
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("memarch")
    runs = client.search_runs([exp.experiment_id])
    [parent] = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    trials = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert parent.info.run_name == "guided s0" and len(trials) == 2
    assert all(r.info.run_name.startswith(f"t{r.data.tags['memarch.trial']} ") and r.info.run_name.count("|") == 3
               for r in trials)
    for run in [parent, *trials]:
        tags = run.data.tags
        assert tags["memarch.benchmark"] == "generated" and tags["memarch.strategy"] == "guided"
        assert tags["memarch.objective"] == "answer_span" and tags["memarch.version"]
        assert {f"memarch.split.{s}" for s in ("search", "validation", "test")} <= set(tags)
        assert ("memarch.git_commit" in tags) == (git_commit() is not None)
    contexts = [d.tags[0].value for d in parent.inputs.dataset_inputs]
    assert sorted(contexts) == ["search", "test", "validation"]
    search = next(d.dataset for d in parent.inputs.dataset_inputs if d.tags[0].value == "search")
    assert search.name == "generated-search"
    assert all([d.dataset.digest for d in t.inputs.dataset_inputs] == [search.digest] for t in trials)
    assert parent.data.tags["memarch.model_uri"].startswith("models:/m-")
    with using(uri):
        model = mlflow.pyfunc.load_model("models:/chat-memory/1")
    [row] = model.predict([{"query": "where does Ann live?"}])
    assert row["items"] == [] and row["memory_items"] == 0  # compiled without a memory: visible as 0


@pytest.mark.parametrize("extra", [["--register", "m", "--no-tracking"], ["--trace-lm"]])
def test_register_and_trace_lm_need_what_they_use(extra, tmp_path, capsys):
    assert main(["compile", *TINY, "--budget", "1", "--out", str(tmp_path),
                 "--tracking-uri", f"sqlite:///{tmp_path}/m.db", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and ("--register" in err or "--trace-lm" in err)


def test_register_without_a_tracker_is_refused():
    from memarch.optimizers.compile import MemarchOptimizer

    with pytest.raises(MemarchError, match="register needs MLflow tracking"):
        MemarchOptimizer(lambda arch, data: None, register="m")


def test_runs_outside_a_git_checkout_have_no_commit_tag(tmp_path):
    from memarch.optimizers.tracking.run_context import git_commit

    assert git_commit(tmp_path) is None


def test_dspy_calls_are_traced_into_the_trial_runs(tracker, tmp_path):
    import argparse

    import dspy
    from dspy.utils import DummyLM

    from memarch.cli.compile import build_evaluator
    from memarch.optimizers.compile import MemarchOptimizer
    from memarch.optimizers.tracking.tracker import Tracker
    from memarch.pipeline.embed import Embedder
    from memarch.pipeline.resources import Resources

    lm = DummyLM([{"answer": "Rex"}] * 500, adapter=dspy.JSONAdapter())
    resources = Resources(embedder=Embedder("hash", cache_dir=tmp_path), lm=lm, cache_dir=tmp_path,
                          use_encoder_cache=False)
    args = argparse.Namespace(knob=["conversations=1", "sessions=3"], benchmark="generated", data=None,
                              limit=3, context_budget=200, judge_lm=None)
    traced = Tracker(tracker.tracking_uri, artifact_root=tmp_path / "artifacts", trace_lm=True)
    opt = MemarchOptimizer(build_evaluator(args, resources), strategy="random", budget=2, lm=lm, tracker=traced,
                           resources=resources, warm_start=[TURNS], finalists=1, log_model=False)
    opt.compile("conversation", testset=None)
    runs = traced.client.search_runs([traced.experiment_id])
    trials = [r for r in runs if "memarch.trial" in r.data.tags]
    assert len(trials) == 2
    for run in trials:
        linked = traced.client.search_traces(locations=[traced.experiment_id], run_id=run.info.run_id)
        assert len(linked) == int(run.data.tags["memarch.lm_traces"]) > 0
    assert traced.lm_tracing is None  # finish() closed it: autolog off, its callback gone
    assert not [c for c in dspy.settings.callbacks if type(c).__name__ in ("MlflowCallback", "_TraceIds")]


def test_compare_runs_are_named_tagged_and_carry_the_splits(store_uri, tmp_path):
    from mlflow.tracking import MlflowClient

    assert main(["compare", *TINY, "--budget", "1", "--seeds", "2", "--strategies", "random",
                 "--tracking-uri", store_uri, "--out", str(tmp_path)]) == 0
    client = MlflowClient(store_uri)
    runs = client.search_runs([client.get_experiment_by_name("memarch").experiment_id])
    parents = sorted((r for r in runs if "mlflow.parentRunId" not in r.data.tags), key=lambda r: r.info.run_name)
    assert [r.info.run_name for r in parents] == ["random s0", "random s1"]
    assert [r.data.tags["memarch.seed"] for r in parents] == ["0", "1"]
    assert all(r.data.tags["memarch.benchmark"] == "generated" and len(r.inputs.dataset_inputs) == 3 for r in parents)


@pytest.mark.parametrize("argv, wanted", [([], False), (["--lm", "local"], True),
                                          (["--lm", "local", "--no-trace-lm"], False),
                                          (["--lm", "local", "--trace-lm"], True)])
def test_lm_calls_are_traced_by_default_whenever_an_lm_is_given(argv, wanted):
    from memarch.cli import build_parser
    from memarch.cli.compile import trace_lm_wanted

    assert trace_lm_wanted(build_parser().parse_args(["compile", *argv])) is wanted

"""Fine-tuning export: only calls whose items were read for successful queries are kept, every line
is one chat example in the messages layout (DSPy's BootstrapFinetune shape), ``--min-score``
filters on the provenance score, and bad CLI input is one line with exit 2."""
from __future__ import annotations

import json

import pytest

from memarch.benchmarks.base import Benchmark, Dialogue, Question
from memarch.cli import main
from memarch.errors import MemarchError
from memarch.optimizers.finetune.export import ONLY_FAILED, export_finetune
from memarch.optimizers.finetune.format import chat_line, check_line
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.episodes import Episode, Turn
from memarch.pipeline.program import MemoryProgram


class Pets(Benchmark):
    """Two sessions, every question in the search split."""

    name = "pets"

    def split_of(self, dialogue, question) -> str:
        return "search"


def pets() -> Pets:
    s1 = Episode(id="n/s1", namespace="n", turns=[Turn("D1:1", "Ann", "My dog is called Rex.", date="2023-05-08")])
    s2 = Episode(id="n/s2", namespace="n", turns=[Turn("D2:1", "Bo", "My cat is called Tom.", date="2023-05-09")])
    questions = [Question("n/q1", "What is Ann's dog called?", "Rex", ["D1:1"], "single-hop", ask_after=0),
                 # the gold says Max: this read of the dog fact fails
                 Question("n/q2", "What is Ann's dog called now?", "Max", ["D1:1"], "single-hop", ask_after=0),
                 # the gold says Felix: the only read of the cat fact fails
                 Question("n/q3", "What is Bo's cat called?", "Felix", ["D2:1"], "single-hop", ask_after=1)]
    return Pets([Dialogue("n", [s1, s2], questions)])


def fact_program(resources) -> MemoryProgram:
    return MemoryProgram(Architecture(("fact",), "vector", "hybrid", "lightweight"), resources=resources, top_k=1)


def test_keeps_only_calls_whose_items_served_a_successful_query(hash_resources):
    export = export_finetune(fact_program(hash_resources), pets())
    reads = {o.query_id: (o.success, o.retrieved_ids) for o in export.result.outcomes}
    assert reads["n/q1"][0] and not reads["n/q2"][0] and not reads["n/q3"][0]
    assert reads["n/q1"][1] == reads["n/q2"][1] != reads["n/q3"][1]  # q1, q2 read the dog fact; q3 the cat's
    assert export.considered == 2
    assert dict(export.dropped) == {ONLY_FAILED: 1}  # Bo's session: its fact served only a failed query
    [line] = export.lines
    check_line(line)
    meta = line["metadata"]
    assert (meta["module"], meta["signature"], meta["episode"], meta["split"]) == \
        ("encoder:fact", "ExtractFacts", "n/s1", "search")
    assert (meta["queries_succeeded"], meta["queries_failed"], meta["score"]) == (1, 1, 0.5)
    assert meta["label"] == "lm-free" and meta["metric"] == "answer_span"
    system, user, assistant = line["messages"]
    assert "Extract atomic, lasting facts" in system["content"]  # the signature's instructions
    assert "[D1:1] Ann: My dog is called Rex." in user["content"] and "D2:1" not in user["content"]
    facts = json.loads(assistant["content"])["facts"]
    assert [(f["subject"], f["value"], f["turn_ids"]) for f in facts] == [("Ann", "Rex", ["D1:1"])]


def test_min_score_filters_on_the_mean_score_of_the_reading_queries(hash_resources):
    kept = export_finetune(fact_program(hash_resources), pets(), min_score=0.5)
    assert len(kept.lines) == 1
    strict = export_finetune(fact_program(hash_resources), pets(), min_score=0.6)
    assert strict.lines == [] and strict.dropped == {ONLY_FAILED: 1, "below --min-score": 1}
    with pytest.raises(MemarchError, match="min_score"):
        export_finetune(fact_program(hash_resources), pets(), min_score=1.5)


def test_chat_adapter_lines_are_what_bootstrap_finetune_builds(hash_resources):
    import dspy

    program = fact_program(hash_resources)
    export = export_finetune(program, pets(), adapter="chat")
    [line] = export.lines
    predictor = program.encoders[0].extract
    inputs = {"session_date": "8 May 2023", "dialogue": "[D1:1] Ann: My dog is called Rex.", "feedback": ""}
    outputs = {"facts": [{"subject": "Ann", "attribute": "dog", "value": "Rex", "turn_ids": ["D1:1"]}]}
    expected = dspy.ChatAdapter().format_finetune_data(signature=predictor.signature, demos=[], inputs=inputs,
                                                       outputs=outputs)
    assert line["messages"][:2] == expected["messages"][:2]
    assert chat_line(predictor, inputs, outputs, adapter="chat") == expected
    with pytest.raises(ValueError, match="facts"):  # a label that does not fit the signature
        chat_line(predictor, inputs, {"facts": [{"subject": "Ann"}]})


def test_every_line_validates_against_the_messages_layout(hash_resources):
    from memarch.benchmarks import get_benchmark

    arch = Architecture(("turn", "summary", "fact", "entity", "event"), "vector", "hybrid", "lightweight")
    program = MemoryProgram(arch, resources=hash_resources, top_k=6, context_budget=60)
    export = export_finetune(program, get_benchmark("generated", conversations=1, sessions=3), limit=12)
    assert export.lines and export.considered == len(export.lines) + sum(export.dropped.values())
    assert any(r.startswith("no label: the LM-free turn encoder") for r in export.dropped)
    for line in export.lines:
        check_line(json.loads(json.dumps(line)))
        assert line["metadata"]["queries_succeeded"] >= 1


def test_with_an_lm_the_prompts_are_exactly_what_the_modules_sent(tmp_path):
    from lm_helpers import scripted_lm

    from memarch.pipeline.embed import Embedder
    from memarch.pipeline.resources import Resources

    def fact(subject, attribute, value, turn):
        return json.dumps({"facts": [{"subject": subject, "attribute": attribute, "value": value, "turn_ids": [turn]}]})

    def passage(text):
        return json.dumps({"passage": text})

    # in stream order: write s1, read q1, q2; write s2, read q3
    answers = [fact("Ann", "pet_dog", "Rex", "D1:1"), passage("Ann's dog is called Rex."), passage("Ann has a dog."),
               fact("Bo", "pet_cat", "Tom", "D2:1"), passage("Bo's cat is called Felix.")]
    lm, server = scripted_lm(answers)
    resources = Resources(embedder=Embedder("hash", cache_dir=tmp_path), cache_dir=tmp_path, lm=lm)
    program = MemoryProgram(Architecture(("fact",), "vector", "hyde", "lightweight"), resources=resources, top_k=1)
    export = export_finetune(program, pets())
    assert len(server.bodies) == 5 and export.considered == 5
    by_module = {line["metadata"]["module"]: line for line in export.lines}
    assert set(by_module) == {"encoder:fact", "retriever:hyde"}  # s1's facts; q1's passage (q2, q3 failed)
    assert dict(export.dropped) == {ONLY_FAILED: 3}
    facts, hyde = by_module["encoder:fact"], by_module["retriever:hyde"]
    assert facts["metadata"]["label"] == hyde["metadata"]["label"] == "lm"
    assert facts["messages"][:2] == server.bodies[0]["messages"]  # system + user, as sent
    assert json.loads(facts["messages"][2]["content"]) == json.loads(answers[0])
    assert hyde["messages"][:2] == server.bodies[1]["messages"]
    assert json.loads(hyde["messages"][2]["content"]) == {"passage": "Ann's dog is called Rex."}
    assert (hyde["metadata"]["signature"], hyde["metadata"]["score"]) == ("HypotheticalPassage", 1.0)
    assert "retrieve" not in program.retriever.__dict__ and "forward" not in program.retriever.write_passage.__dict__


def test_experience_encoder_outputs_state_their_signatures(hash_resources):
    from memarch.optimizers.finetune.labels import encoder_pairs
    from memarch.pipeline.episodes import Step
    from memarch.pipeline.items import MemoryItem
    from memarch.pipeline.registry import REGISTRY

    episode = Episode(id="e1", task="put the apple in the fridge", outcome="failure", namespace="ns",
                      steps=[Step("s1", "take apple", "You can't."), Step("s2", "open fridge", "Opened.")])
    tip = {"topic": "take", "principle": "Before `take apple`, do `open fridge`.", "micro_example": "x",
           "counterfactual": "y", "use_when": "about to take", "avoid_when": "done", "source": "precondition"}
    insight = {"failure_pattern": "precondition_violation", "root_cause": "took before opening",
               "corrective_strategy": "open first", "detection_signal": "You can't."}
    for name, fields, signature in (("tip", tip, "ExtractTips"), ("insight", insight, "DiagnoseFailure")):
        encoder = REGISTRY.get("encoder", name).cls(hash_resources)
        item = MemoryItem(f"{name} text", name, fields=fields, episode_id="e1", source_ids=["s1"], namespace="ns")
        [pair] = encoder_pairs(encoder, episode, [item], lm=False)
        assert pair.signature_name == signature and pair.inputs["task"] == episode.task
        assert "[s1] > take apple" in pair.inputs["trajectory"]
        chat_line(pair.predictor, pair.inputs, pair.outputs)  # validates against the output types


@pytest.mark.parametrize("broken, problem", [
    ({"messages": [{"role": "user", "content": "q"}]}, "at least two"),
    ({"messages": [{"role": "user", "content": "q"}, {"role": "bot", "content": "a"}]}, "role"),
    ({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": " "}]}, "non-empty"),
    ({"messages": [{"role": "assistant", "content": "a"}, {"role": "user", "content": "q"}]}, "start with a user"),
    ({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}, "metadata"),
])
def test_check_line_rejects_what_is_not_a_chat_example(broken, problem):
    with pytest.raises(ValueError, match=problem):
        check_line(broken)


def test_check_line_refuses_the_test_split():
    line = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}],
            "metadata": {"module": "m", "signature": "S", "episode": None, "score": 1.0, "split": "test",
                         "label": "lm-free"}}
    with pytest.raises(ValueError, match="test split"):
        check_line(line)


def test_a_manager_conflict_decision_becomes_a_resolve_conflict_pair(hash_resources):
    from memarch.optimizers.finetune.recorder import CallRecorder
    from memarch.pipeline.items import MemoryItem

    program = MemoryProgram(Architecture(("trajectory",), "vector", "hybrid", "json_full"), resources=hash_resources)
    old = MemoryItem("open the fridge first", "trajectory", episode_id="e1", outcome="success", namespace="ns")
    new = MemoryItem("open the fridge first!", "trajectory", episode_id="e2", outcome="failure", namespace="ns")
    program.store.add([old])
    with CallRecorder(program) as recorder:
        assert program.manager.resolve_conflict(new, old, program.store, 0.95) is True
    assert "resolve_conflict" not in program.manager.__dict__  # the hook is gone after the run
    [pair] = recorder.pairs
    assert (pair.module, pair.signature_name, pair.outputs["decision"]) == \
        ("manager:json_full", "ResolveConflict", "keep_both")  # the LM-free rule keeps both
    assert "opposite outcomes" in pair.outputs["reason"] and set(pair.credited) == {old.id, new.id}
    assert "outcome success" in pair.inputs["existing_memory"] and "outcome failure" in pair.inputs["new_memory"]
    check_line({**chat_line(pair.predictor, pair.inputs, pair.outputs),
                "metadata": {"module": pair.module, "signature": pair.signature_name, "episode": "e2",
                             "score": 1.0, "split": "search", "label": pair.label}})


def test_the_exported_file_loads_with_hugging_face_datasets(hash_resources, tmp_path):
    datasets = pytest.importorskip("datasets")
    path = export_finetune(fact_program(hash_resources), pets()).write(tmp_path / "pairs.jsonl")
    ds = datasets.load_dataset("json", data_files=str(path), split="train")
    assert ds.num_rows == 1 and ds[0]["messages"][-1]["role"] == "assistant"


# -- CLI --------------------------------------------------------------------------------------------
TINY = ["--benchmark", "generated", "--knob", "conversations=1", "--knob", "sessions=3", "--limit", "8",
        "--embedder", "hash", "--no-tracking", "--storage", "memory", "--budget", "3"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    assert main(["compile", *TINY, "--out", str(out), "--study-name", "tiny"]) == 0
    return out


def test_cli_exports_the_study_pick_from_the_search_split(runs, tmp_path, capsys):
    capsys.readouterr()
    out = tmp_path / "pairs.jsonl"
    assert main(["export-finetune", "--study", "tiny", "--runs", str(runs), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "split: search (never test)" in printed and "pairs considered" in printed
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert f"wrote {len(lines)} pairs" in printed
    picked = json.loads((runs / "tiny.program.json").read_text())["architecture"]
    for line in lines:
        check_line(line)
        assert line["metadata"]["source"] == "study tiny"
        assert line["metadata"]["architecture"] == Architecture.from_dict(picked).key()


@pytest.mark.parametrize("argv, message", [
    ([], "one of the arguments --study --program is required"),
    (["--study", "tiny", "--program", "p.json"], "not allowed with argument"),
    (["--study", "nope"], "no saved program"),
    (["--program", "missing.json"], "no such file"),
    (["--study", "tiny", "--min-score", "2"], "--min-score must be in [0, 1]"),
    (["--study", "tiny", "--limit", "0"], "--limit must be a positive integer"),
    (["--study", "tiny", "--adapter", "xml"], "invalid choice"),
])
def test_cli_errors_are_one_line_and_exit_2(runs, tmp_path, capsys, argv, message):
    capsys.readouterr()
    args = ["export-finetune", *argv, "--runs", str(runs), "--out", str(tmp_path / "x.jsonl")]
    try:
        code = main(args)
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "x.jsonl").exists()


def test_cli_refuses_a_directory_as_out(runs, tmp_path, capsys):
    capsys.readouterr()
    assert main(["export-finetune", "--study", "tiny", "--runs", str(runs), "--out", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err

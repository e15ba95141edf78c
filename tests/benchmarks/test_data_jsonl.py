"""The memarch data format (docs/data.md): the schema, problems reported with their line numbers,
``memarch data check|stats|convert``, and the ``jsonl`` benchmark built from a file."""
from __future__ import annotations

import json

import pytest

from memarch.benchmarks import get_benchmark
from memarch.benchmarks.generated import GeneratedConversations
from memarch.benchmarks.formats.jsonl_check import read_data, schema
from memarch.benchmarks.formats.jsonl_records import benchmark_records, dialogue_from_record, write_records
from memarch.cli import main
from memarch.errors import MemarchError


def _lines(path, records) -> None:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))


def dialogue(did="d1", **changes) -> dict:
    rec = {"type": "dialogue", "id": did,
           "sessions": [{"id": f"{did}/s1", "time": "2024-03-01T10:00",
                         "turns": [{"id": "t1", "speaker": "Ann", "text": "I adopted a beagle named Biscuit."},
                                   {"id": "t2", "speaker": "Bo", "text": "Lovely!"}]},
                        {"id": f"{did}/s2", "time": "2024-03-09",
                         "turns": [{"id": "t3", "speaker": "Ann", "text": "We moved to Lisbon."}]}],
           "questions": [{"id": f"{did}/q1", "question": "What is Ann's dog called?", "answer": "Biscuit",
                          "evidence": ["t1"], "category": "single-hop"},
                         {"id": f"{did}/q2", "question": "Where does Ann live?", "answer": ["Lisbon"],
                          "evidence": ["t3"], "category": "single-hop", "ask_after": f"{did}/s2"},
                         {"id": f"{did}/q3", "question": "What is Ann's boat called?", "answer": None,
                          "category": "adversarial", "ask_after": 0}]}
    rec.update(changes)
    return rec


def test_the_schema_is_a_valid_json_schema():
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(schema())


def test_a_benchmark_survives_records_unchanged():
    bench = GeneratedConversations(seed=3, conversations=2, sessions=3)
    records = list(benchmark_records(bench))
    assert records[0] == {"type": "meta", "format": "memarch-data/1", "source": "generated",
                          "categories": list(bench.categories)}
    assert [dialogue_from_record(json.loads(json.dumps(r))) for r in records[1:]] == bench.dialogues


def test_fields_default_and_convert_as_documented(tmp_path):
    f = tmp_path / "d.jsonl"
    _lines(f, [dialogue()])
    d = get_benchmark("jsonl", f).dialogues[0]
    assert [t.date for s in d.sessions for t in s.turns] == ["2024-03-01", "2024-03-01", "2024-03-09"]
    assert d.sessions[0].namespace == "d1" and d.sessions[0].time == "2024-03-01T10:00"
    q1, q2, q3 = d.questions
    assert (q1.ask_after, q2.ask_after, q3.ask_after) == (None, 1, 0)
    assert q2.answer == "Lisbon" and q3.answer is None and not q3.answerable
    assert q1.evidence == ["t1"] and q3.evidence == []


BAD = [
    ("not json {", 1, "not JSON"),
    (dialogue("d2", sessions=[{"id": "x/s1", "turns": [{"id": "t1", "text": "hi"}]}]), 2,
     "sessions[0].turns[0]: 'speaker' is a required property"),
    (dialogue("d1"), 3, None),
    (dialogue("d1"), 4, "duplicate record id 'd1' (first on line 3)"),
    (dialogue("d3", questions=[{"id": "d3/q", "question": "Where?", "answer": "X", "evidence": ["t9"]}]), 5,
     "warning: questions[0] (d3/q): evidence 't9' names no turn"),
    (dialogue("d4", questions=[{"id": "d4/q", "question": "Where?", "answer": "X", "ask_after": "nope"}]), 6,
     "ask_after 'nope' names no session"),
    (dialogue("d5", questions=[{"id": "d5/q", "question": "Where?", "answer": 3}]), 7,
     "questions[0].answer: 3 is not valid under any of the given schemas"),
    ({"type": "meta", "format": "memarch-data/1"}, 8, "a meta record must be the first record"),
    (dialogue("d6", sessions=[{"id": "d6/s1", "time": "May 8", "turns": []}]), 9,
     "sessions[0].time: 'May 8' does not match"),
    ({"type": "task", "id": "k1", "task": "open the door", "steps": [{"action": "open door"}],
      "outcome": "success", "category": "doors"}, 10, "mixes dialogue and task records"),
    ({"type": "convo"}, 11, "type: 'convo' is not one of"),
]


def test_every_problem_is_reported_with_its_line_number(tmp_path):
    f = tmp_path / "bad.jsonl"
    rows = [row for row, _, _ in BAD]
    _lines(f, rows)
    found = [str(p) for p in read_data(f).problems]
    for _, line, needle in BAD:
        if needle is not None:
            assert any(p.startswith(f"line {line}: ") and needle in p for p in found), (line, needle, found)
    assert [int(p.split(":")[0].split()[1]) for p in found] == sorted(int(p.split(":")[0].split()[1]) for p in found)


def test_duplicate_turn_session_question_and_step_ids(tmp_path):
    f = tmp_path / "dup.jsonl"
    twice = dialogue("d1")
    twice["sessions"][1]["turns"][0]["id"] = "t1"
    twice["sessions"][1]["id"] = "d1/s1"
    twice["questions"][1]["id"] = "d1/q1"
    twice["questions"][1]["ask_after"] = 1
    _lines(f, [twice])
    found = "\n".join(map(str, read_data(f).problems))
    assert "duplicate turn id 't1'" in found and "duplicate session id 'd1/s1'" in found
    assert "duplicate question id 'd1/q1'" in found
    t = tmp_path / "steps.jsonl"
    _lines(t, [{"type": "task", "id": "k1", "task": "x", "outcome": "failure", "relevant": ["k2", "k1"],
                "steps": [{"id": "a", "action": "go"}, {"id": "a", "action": "go"}]}])
    found = "\n".join(map(str, read_data(t).problems))
    assert "duplicate step id 'a'" in found and "'k2' names no task" in found and "relevant to itself" in found


# -- CLI -----------------------------------------------------------------------------------------
def test_data_check_exit_codes(tmp_path, capsys):
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    _lines(good, [dialogue()])
    _lines(bad, [dialogue(), "{", dialogue("d1")])
    assert main(["data", "check", str(good)]) == 0
    assert "valid (1 dialogue records)" in capsys.readouterr().out
    assert main(["data", "check", str(bad)]) == 2
    out = capsys.readouterr().out
    assert f"{bad}:2: error: not JSON" in out and f"{bad}:3: error: duplicate record id 'd1'" in out
    assert "2 error(s), 0 warning(s)" in out and "cannot be loaded" in out
    assert main(["data", "check", str(tmp_path / "missing.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert "missing.jsonl: not found" in err and "\n" not in err


def test_a_file_with_only_warnings_passes_check_and_loads_strict_fails(tmp_path, capsys):
    f = tmp_path / "warn.jsonl"
    rec = dialogue()
    rec["questions"][0]["evidence"] = ["t1", "D9:9"]
    _lines(f, [rec])
    assert main(["data", "check", str(f)]) == 0  # `data check F && memarch compile ...` goes on
    assert "0 error(s), 1 warning(s)" in capsys.readouterr().out
    assert main(["data", "check", "--strict", str(f)]) == 2
    assert "0 error(s), 1 warning(s)" in capsys.readouterr().out
    bench = get_benchmark("jsonl", f)
    assert len(bench.problems) == 1 and bench.dialogues[0].questions[0].evidence == ["t1", "D9:9"]


def test_data_stats_counts_per_category_and_split(tmp_path, capsys):
    f = tmp_path / "d.jsonl"
    _lines(f, [dialogue("a"), dialogue("b")])
    assert main(["data", "stats", str(f), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert (s["dialogues"], s["sessions"], s["turns"], s["questions"], s["answerable"]) == (2, 4, 6, 6, 4)
    assert s["categories"] == {"adversarial": 2, "single-hop": 4}
    assert sum(v["questions"] for v in s["splits"].values()) == 6
    assert main(["data", "stats", str(f)]) == 0
    assert "single-hop" in capsys.readouterr().out


def test_data_convert_writes_a_file_that_checks_and_loads_the_same(tmp_path, capsys):
    out = tmp_path / "gen.jsonl"
    assert main(["data", "convert", "--from", "generated", "--out", str(out), "--knob", "conversations=2",
                 "--knob", "sessions=3", "--knob", "seed=4"]) == 0
    assert "2 dialogues, 6 sessions" in capsys.readouterr().out
    assert main(["data", "check", str(out)]) == 0
    source = GeneratedConversations(seed=4, conversations=2, sessions=3)
    assert get_benchmark("jsonl", out).dialogues == source.dialogues


@pytest.mark.parametrize("argv, needle", [
    (["--from", "textworld"], "no recorded trajectories"),
    (["--from", "nope"], "unknown benchmark"),
    (["--from", "generated", "--knob", "conversations"], "KEY=VALUE"),
    (["--from", "locomo", "/nonexistent/locomo10.json"], "not found"),
])
def test_data_convert_refuses_with_one_line(tmp_path, capsys, argv, needle):
    assert main(["data", "convert", *argv, "--out", str(tmp_path / "x.jsonl")]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "\n" not in err
    assert not (tmp_path / "x.jsonl").exists()


def test_jsonl_benchmark_refuses_a_broken_file_with_its_line(tmp_path, capsys):
    f = tmp_path / "bad.jsonl"
    _lines(f, [dialogue(), dialogue("d1")])
    with pytest.raises(MemarchError, match=r"bad.jsonl:2: duplicate record id"):
        get_benchmark("jsonl", f)
    assert main(["evaluate", "--benchmark", "jsonl", "--data", str(f), "--embedder", "hash"]) == 2
    assert "bad.jsonl:2: duplicate record id 'd1'" in capsys.readouterr().err
    assert main(["evaluate", "--benchmark", "jsonl", "--embedder", "hash"]) == 2
    assert "no data file given" in capsys.readouterr().err
    with pytest.raises(MemarchError, match="applies to a file of agent tasks"):
        get_benchmark("jsonl", _good(tmp_path), mode="dynamic")


def _good(tmp_path):
    f = tmp_path / "good.jsonl"
    _lines(f, [dialogue()])
    return f


def test_write_records_is_one_json_object_per_line(tmp_path):
    f = tmp_path / "w.jsonl"
    assert write_records(f, [{"type": "meta", "format": "memarch-data/1"}, dialogue()]) == 2
    assert [json.loads(line)["type"] for line in f.read_text().splitlines()] == ["meta", "dialogue"]


def test_compile_compare_and_the_saved_program_run_on_a_jsonl_file(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MEMARCH_CACHE_DIR", str(tmp_path))
    data = tmp_path / "mine.jsonl"
    assert main(["data", "convert", "--from", "generated", "--out", str(data), "--knob", "conversations=1",
                 "--knob", "sessions=3"]) == 0
    tiny = ["--benchmark", "jsonl", "--data", str(data), "--limit", "8", "--embedder", "hash", "--no-tracking",
            "--storage", "memory"]
    out = tmp_path / "run"
    assert main(["compile", *tiny, "--budget", "3", "--out", str(out), "--output", str(out / "p.json")]) == 0
    rec = json.loads((out / "p.json").read_text())["evaluation"]
    assert rec["benchmark"] == "jsonl" and rec["data"] == str(data.resolve()) and rec["data_sha256"]
    capsys.readouterr()
    assert main(["evaluate", "--program", str(out / "p.json")]) == 0
    assert ": reproduced" in capsys.readouterr().out
    assert main(["compare", *tiny, "--budget", "2", "--seeds", "1", "--strategies", "random",
                 "--objectives", "quality,memory_words", "--out", str(tmp_path / "cmp")]) == 0


def test_longmemeval_converts_when_its_loader_is_present(tmp_path):
    """Runs once memarch/benchmarks/longmemeval.py and its fixture exist (another branch adds them):
    the converter is generic, nothing here names LongMemEval's layout."""
    from pathlib import Path

    from memarch.benchmarks import available

    fixture = Path(__file__).parents[1] / "fixtures" / "longmemeval"
    if "longmemeval" not in available() or not fixture.exists():
        pytest.skip("the longmemeval loader or its fixture is not on this branch")
    out = tmp_path / "lme.jsonl"
    assert main(["data", "convert", "--from", "longmemeval", str(fixture), "--out", str(out)]) == 0
    assert main(["data", "check", str(out)]) == 0
    source = get_benchmark("longmemeval", fixture)
    converted = get_benchmark("jsonl", out, split_by=source.split_by)  # LongMemEval splits by instance
    assert converted.dialogues == source.dialogues and converted.split_settings() == source.split_settings()


def test_the_examples_in_docs_data_md_are_valid_records(tmp_path):
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "data.md").read_text(encoding="utf-8")
    examples = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", doc, re.S)]
    assert {e["type"] for e in examples} == {"dialogue", "task"}
    for example in examples:
        f = tmp_path / f"{example['type']}.jsonl"
        rows = [example] if example["type"] == "dialogue" else \
            [example] + [{**example, "id": rid, "relevant": []} for rid in example["relevant"]]
        _lines(f, rows)
        assert read_data(f).problems == [], example["type"]
    d = get_benchmark("jsonl", tmp_path / "dialogue.jsonl").dialogues[0]
    assert d.questions[1].answer == "beagle, Lisbon" and d.questions[1].ask_after == 1


def test_a_file_that_passed_the_schema_is_not_validated_again_until_it_changes(tmp_path, monkeypatch):
    import memarch.benchmarks.formats.jsonl_check as check

    monkeypatch.setenv("MEMARCH_CACHE_DIR", str(tmp_path / "cache"))
    f = tmp_path / "d.jsonl"
    _lines(f, [dialogue()])
    calls = []
    real = check.schema_problems
    monkeypatch.setattr(check, "schema_problems", lambda r, n: calls.append(n) or real(r, n))
    get_benchmark("jsonl", f)
    get_benchmark("jsonl", f)
    assert calls == [1]  # the second load trusted the first pass over the same bytes
    assert read_data(f).problems == [] and calls == [1, 1]  # `data check` always validates
    _lines(f, [dialogue(sessions=[{"id": "s", "turns": [{"id": "t", "text": "no speaker"}]}])])
    with pytest.raises(MemarchError, match="'speaker' is a required property"):
        get_benchmark("jsonl", f)

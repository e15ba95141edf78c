"""``--knob KEY=VALUE``: one grammar and one parser for every command that builds a benchmark."""
from __future__ import annotations

import pytest

from memarch.cli import build_parser
from memarch.cli._knobs import parse_knob, parse_knobs
from memarch.errors import MemarchError

COMMANDS = (["compile"], ["compare"], ["evaluate"], ["landscape", "build", "--out", "x.npz"],
            ["data", "convert", "--from", "babi", "--out", "x.jsonl"])


@pytest.mark.parametrize("text, value", [
    ("conversations=3", 3), ("tasks=1,2", [1, 2]), ("tasks=3,", [3]), ("fraction=0.5", 0.5),
    ("shuffle=true", True), ("tasks=[1, 2]", [1, 2]), ("split_by=dialogue", "dialogue"), ("seed=-1", -1),
    ("name=a,b", "a,b"),  # not all integers: text
])
def test_one_grammar(text, value):
    assert parse_knob(text) == (text.partition("=")[0], value)


@pytest.mark.parametrize("text", ["conversations", "=3", "conversations=", " =3"])
def test_a_malformed_knob_is_one_line(text):
    with pytest.raises(MemarchError, match="--knob takes KEY=VALUE"):
        parse_knob(text)


def test_every_command_offers_the_same_option():
    """compile, compare, evaluate, landscape build and data convert: one option, one help, one parser
    (compile refused ``tasks=1,2`` before, where data convert took it)."""
    parser = build_parser()
    actions = []
    for argv in COMMANDS:
        args = parser.parse_args([*argv, "--knob", "tasks=1,2", "--knob", "conversations=2"])
        assert parse_knobs(args.knob) == {"tasks": [1, 2], "conversations": 2}
        sub = parser
        for word in argv:
            if word.startswith("-"):
                break
            sub = next(a for a in sub._actions if a.__class__.__name__ == "_SubParsersAction").choices[word]
        actions.append(next(a for a in sub._actions if "--knob" in a.option_strings))
    assert len({(a.metavar, a.help) for a in actions}) == 1


def test_compile_builds_a_benchmark_with_a_list_knob(hash_resources, data_dir):
    from memarch.cli.compile import build_evaluator

    args = build_parser().parse_args(["compile", "--benchmark", "babi", "--data", str(data_dir / "babi"),
                                      "--knob", "tasks=1,2", "--knob", "stories=2", "--embedder", "hash"])
    evaluator = build_evaluator(args, hash_resources)
    assert {d.namespace.split("-")[1] for d in evaluator.benchmark.dialogues} == {"1", "2"}


def test_evaluate_builds_the_benchmark_with_its_knobs(tmp_path, capsys, monkeypatch):
    """``memarch evaluate --knob``: the variant of the benchmark asked for (it had no --knob)."""
    import json

    from memarch.cli import main

    monkeypatch.setenv("MEMARCH_CACHE_DIR", str(tmp_path))
    out = tmp_path / "result.json"
    assert main(["evaluate", "--embedder", "hash", "--split", "all", "--knob", "conversations=1",
                 "--knob", "sessions=2", "--json", str(out)]) == 0
    ids = [o["query_id"] for o in json.loads(out.read_text())["outcomes"]]
    assert ids and {i.partition("/")[0] for i in ids} == {"gen-0"}  # one conversation, not the default six
    capsys.readouterr()


@pytest.mark.parametrize("knob, needle", [("conversations", "--knob takes KEY=VALUE"),
                                          ("colour=red", "benchmark 'generated'"),
                                          ("conversations=0", "conversations >= 1")])
def test_evaluate_refuses_a_bad_knob_in_one_line(knob, needle, tmp_path, capsys, monkeypatch):
    from memarch.cli import main

    monkeypatch.setenv("MEMARCH_CACHE_DIR", str(tmp_path))
    assert main(["evaluate", "--embedder", "hash", "--knob", knob]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "\n" not in err

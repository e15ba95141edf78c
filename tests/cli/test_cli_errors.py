"""Bad input a user realistically gives the CLI: one line on stderr, exit code 2, never a traceback."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ARCH = {"schema_version": "1", "encode": ["turn", "fact"], "store": "vector", "retrieve": "hybrid",
        "manage": "lightweight"}


def memarch(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memarch", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def one_line_exit_2(p: subprocess.CompletedProcess, needle: str) -> None:
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert needle in lines[0], lines[0]


@pytest.fixture
def arch_file(tmp_path):
    f = tmp_path / "arch.json"
    f.write_text(json.dumps(ARCH))
    return f


def _arch(tmp_path, **changes) -> str:
    f = tmp_path / "bad-arch.json"
    f.write_text(json.dumps({**ARCH, **changes}))
    return str(f)


def test_validate_a_directory(tmp_path):
    one_line_exit_2(memarch("validate", str(tmp_path)), "Is a directory")


def test_validate_empty_encode_names_the_rule(tmp_path):
    one_line_exit_2(memarch("validate", _arch(tmp_path, encode=[])), "encode-nonempty")


def test_validate_a_saved_program_says_so(tmp_path):
    f = tmp_path / "program.json"
    f.write_text(json.dumps({"format": "memarch.program/1", "architecture": ARCH, "top_k": 4}))
    one_line_exit_2(memarch("validate", str(f)), "saved memarch program")
    one_line_exit_2(memarch("evaluate", "--architecture", str(f), "--limit", "1", "--embedder", "hash"),
                    "saved memarch program")


@pytest.mark.parametrize("changes, needle", [
    ({"retrieve": "graph"}, "retriever-store"),                      # invalid combination
    ({"retrieve": "hyde"}, "lm-required"),                           # needs an LM, none given
    ({"encode": ["tip", "workflow"]}, "experience"),                 # wrong family for the benchmark
    ({"encode": []}, "encode-nonempty"),
])
def test_evaluate_invalid_architecture_is_rejected_up_front(tmp_path, changes, needle):
    p = memarch("evaluate", "--architecture", _arch(tmp_path, **changes), "--limit", "1", "--embedder", "hash")
    one_line_exit_2(p, needle)


@pytest.mark.parametrize("extra, needle", [
    (["--split", "nonsense"], "--split"),
    (["--split", "TEST"], "--split"),
    (["--limit", "0"], "--limit"),
    (["--limit", "-3"], "--limit"),
    (["--context-budget", "0"], "--context-budget"),
    (["--top-k", "0"], "--top-k"),
    (["--embedder", "no-such-model"], "--embedder"),
    (["--benchmark", "nope"], "unknown benchmark"),
    (["--json", "/"], "is a directory"),
])
def test_evaluate_bad_options(arch_file, extra, needle):
    one_line_exit_2(memarch("evaluate", "--architecture", str(arch_file), *extra), needle)


@pytest.mark.parametrize("command", [
    ["compile", "--budget", "2"], ["compare", "--budget", "2", "--strategies", "random"],
    ["landscape", "build", "--sample", "2"],
])
def test_an_unknown_embedder_stops_compile_compare_and_landscape_before_any_trial(command, tmp_path):
    """They used to run trials that each failed on a hub download, then stop after --max-failures."""
    extra = ["--out", str(tmp_path / "l.npz")] if command[0] == "landscape" else ["--out", str(tmp_path)]
    p = memarch(*command, "--benchmark", "generated", "--embedder", "no-such-model", *extra, cwd=tmp_path)
    one_line_exit_2(p, "--embedder 'no-such-model'")
    assert "Trial" not in p.stdout + p.stderr


def test_evaluate_wrong_data(arch_file, tmp_path, data_dir):
    bad = tmp_path / "bad.json"
    bad.write_text("{oops")
    one_line_exit_2(memarch("evaluate", "--benchmark", "locomo", "--data", str(bad), "--architecture",
                            str(arch_file)), "malformed JSON")
    one_line_exit_2(memarch("evaluate", "--benchmark", "locomo", "--data", str(arch_file), "--architecture",
                            str(arch_file)), "not a LoCoMo file")
    one_line_exit_2(memarch("evaluate", "--benchmark", "babi", "--data", str(data_dir / "locomo"),
                            "--architecture", str(arch_file)), "no bAbI task files")


def test_atomic_write_to_a_directory_is_a_one_line_error(tmp_path):
    from memarch.errors import MemarchError
    from memarch.pipeline.files import atomic_write_json

    with pytest.raises(MemarchError, match="is a directory"):
        atomic_write_json(tmp_path, {"a": 1})


def test_saved_files_get_the_usual_permissions(tmp_path):
    from memarch.pipeline.files import atomic_write_json

    old = os.umask(0o022)
    try:
        atomic_write_json(tmp_path / "x.json", {"a": 1})
    finally:
        os.umask(old)
    assert (tmp_path / "x.json").stat().st_mode & 0o777 == 0o644


def test_corrupt_saved_program_is_a_one_line_error(tmp_path):
    from memarch.errors import MemarchError
    from memarch.pipeline.program import MemoryProgram

    base = {"format": "memarch.program/1", "architecture": ARCH, "top_k": 4, "embedder": "hash"}
    for bad in ({**base, "context_budget": "abc"}, {**base, "memory": [1, 2]}, {**base, "top_k": "x"},
                {**base, "architecture": {**ARCH, "retrieve": "graph"}}, {"format": "other"}):
        f = tmp_path / "p.json"
        f.write_text(json.dumps(bad))
        with pytest.raises(MemarchError):
            MemoryProgram.load(f)


def test_a_program_saved_with_the_hash_embedder_reloads_with_it(tmp_path):
    from memarch.pipeline.program import MemoryProgram

    f = tmp_path / "p.json"
    f.write_text(json.dumps({"format": "memarch.program/1", "architecture": ARCH, "embedder": "hash"}))
    assert MemoryProgram.load(f).resources.embedder.model == "hash"


def test_locomo_data_dir_may_be_the_dataset_directory(monkeypatch, data_dir):
    from memarch.benchmarks.locomo import resolve_path

    for root in (data_dir, data_dir / "locomo"):
        monkeypatch.setenv("MEMARCH_DATA_DIR", str(root))
        assert resolve_path(None) == data_dir / "locomo" / "locomo10.json"


def test_evaluate_data_without_a_file_backed_benchmark(arch_file, data_dir):
    # forgetting --benchmark locomo must not silently score the generated benchmark
    one_line_exit_2(memarch("evaluate", "--data", str(data_dir / "locomo"), "--architecture", str(arch_file)),
                    "--data is for locomo and babi")


def test_out_of_range_benchmark_knob_is_a_one_line_error():
    from memarch.benchmarks import get_benchmark
    from memarch.errors import MemarchError

    with pytest.raises(MemarchError, match="sessions"):
        get_benchmark("generated", sessions=1)


def test_validate_accepts_a_utf8_bom(tmp_path):
    f = tmp_path / "bom.json"
    f.write_bytes(b"\xef\xbb\xbf" + json.dumps(ARCH).encode())
    p = memarch("validate", str(f))
    assert p.returncode == 0 and "valid conversation architecture" in p.stdout, p.stderr


# -- renamed options: one name per concept (memarch.cli.RENAMED) ------------------------------------
OBJECTIVE_IS_METRIC = ("memarch: --objective is now --metric (the quality metric; --objectives names the "
                       "study's objectives)")
BUDGET_IS_CONTEXT = ("memarch evaluate: --budget is now --context-budget (words of context); --budget counts "
                     "trials on compile and compare")


@pytest.mark.parametrize("argv, line", [
    (["evaluate", "--objective", "answer_recall"], OBJECTIVE_IS_METRIC),
    (["evaluate", "--embedder", "hash", "--objective=qa_f1"], OBJECTIVE_IS_METRIC),
    # not read as an abbreviation of --objectives
    (["compile", "--objective", "answer_recall", "--budget", "1"], OBJECTIVE_IS_METRIC),
    (["compare", "--objective", "answer_recall"], OBJECTIVE_IS_METRIC),
    (["landscape", "replay", "x.npz", "--objective", "answer_span"], OBJECTIVE_IS_METRIC),
    (["evaluate", "--budget", "100"], BUDGET_IS_CONTEXT),
    (["evaluate", "--limit", "3", "--budget=100", "--no-such-flag"], BUDGET_IS_CONTEXT),
])
def test_renamed_options_are_refused_with_one_line_naming_the_new_one(argv, line, capsys):
    from memarch.cli import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    captured = capsys.readouterr()
    assert captured.err == line + "\n" and captured.out == ""


def test_renamed_options_are_refused_without_a_traceback():
    one_line_exit_2(memarch("evaluate", "--objective", "answer_recall", "--budget", "100"), "is now --metric")
    one_line_exit_2(memarch("evaluate", "--budget", "100"), "is now --context-budget")


def test_renamed_options_are_hidden_and_budget_still_counts_trials():
    from memarch.cli import build_parser, is_renamed

    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    for name in ("evaluate", "compile", "compare"):
        sub = commands[name]
        assert "--metric" in sub.format_help() and "--objective " not in sub.format_help()
        assert "--context-budget" in sub.format_help()
    assert "--budget" not in commands["evaluate"].format_help().replace("--memory-budget", "").replace(
        "--context-budget", "")
    assert any(is_renamed(a) for a in commands["evaluate"]._actions)
    assert not any(is_renamed(a) and "--budget" in a.option_strings for a in commands["compile"]._actions)
    args = parser.parse_args(["compile", "--budget", "7", "--context-budget", "150", "--metric", "answer_recall"])
    assert (args.budget, args.context_budget, args.metric) == (7, 150, "answer_recall")
    args = parser.parse_args(["evaluate", "--context-budget", "150", "--metric", "evidence_recall"])
    assert (args.context_budget, args.metric) == (150, "evidence_recall")

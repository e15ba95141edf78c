"""CLI: `memarch space` and `memarch validate`; bad input is one line and exit code 2."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest


def memarch(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memarch", *args], capture_output=True, text=True, timeout=300)


def test_space_json():
    p = memarch("space", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert (d["family"], d["total"], d["valid"]) == ("experience", 3720, 2573)
    assert d["valid_without_lm"] < d["valid"]
    assert "store:llm_graph" in d["excluded"] and "retriever:hyde" in d["excluded"]
    assert "retriever-store" in d["rules"]
    text = memarch("space", "--family", "conversation")
    assert text.returncode == 0 and "3038 valid" in text.stdout  # one retriever more: session (conversations)


@pytest.mark.parametrize("content, needle", [
    ("{not json", "malformed JSON"),
    (json.dumps({"schema_version": "1", "encode": ["tip"], "store": "nosuch", "retrieve": "hybrid",
                 "manage": "lightweight"}), "nosuch"),
    (json.dumps({"schema_version": "1", "encode": ["tip"], "store": "vector", "retrieve": "graph",
                 "manage": "lightweight"}), "retriever-store"),
    (json.dumps({"schema_version": "1", "encode": ["tip"], "store": "json", "retrieve": "hybrid",
                 "manage": "lightweight", "oops": 1}), "unknown field"),
])
def test_validate_errors_are_one_line_exit_2(tmp_path, content, needle):
    f = tmp_path / "a.json"
    f.write_text(content)
    p = memarch("validate", str(f))
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in p.stderr


def test_validate_ok_and_missing_file(tmp_path):
    f = tmp_path / "a.json"
    f.write_text(json.dumps({"schema_version": "1", "encode": ["tip", "workflow"], "store": "json",
                             "retrieve": "hybrid", "manage": "lightweight"}))
    assert memarch("validate", str(f)).returncode == 0
    p = memarch("validate", str(tmp_path / "missing.json"))
    assert p.returncode == 2 and "not found" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_unknown_family_and_bad_flag():
    p = memarch("space", "--family", "nope")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
    p = memarch("space", "--bogus")
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1


def test_the_parser_adds_only_the_named_commands_options():
    """Issue 20: `memarch --help` and a command's own parse must not pay for every other command's
    options (compile's import DSPy): only the named command's are added; unknown names get them all."""
    from memarch.cli import build_parser

    def options(parser, name):
        sub = next(a for a in parser._actions if a.dest == "command").choices[name]
        return {o for a in sub._actions for o in a.option_strings}

    only = build_parser(["space", "--json"])
    assert "--json" in options(only, "space") and options(only, "compile") == {"-h", "--help"}
    top = build_parser(["--help"])
    assert options(top, "space") == {"-h", "--help"}
    for every in (build_parser(), build_parser(["nonsense"])):
        assert "--json" in options(every, "space") and "--budget" in options(every, "compile")


def test_help_and_a_commands_help_start_without_dspy():
    import subprocess
    import sys

    code = ("import sys\nfrom memarch.cli import main\n"
            "for argv in (['--help'], ['validate', '--help'], ['compile', '--help']):\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "print('DSPY' if 'dspy' in sys.modules else 'NO-DSPY', file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stderr.strip().splitlines()[-1] == "NO-DSPY", out.stderr[-500:]
    assert "compile" in out.stdout and "--budget" in out.stdout

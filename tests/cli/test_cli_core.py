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
    assert text.returncode == 0 and "2573 valid" in text.stdout


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

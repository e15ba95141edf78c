"""The README's module table is generated from the registry and must not drift from it."""
from __future__ import annotations

from pathlib import Path

from memarch.cli.space import knob_table, module_table
from memarch.pipeline.registry import REGISTRY, ROLES

README = Path(__file__).resolve().parents[1] / "README.md"
SEARCH_DOC = Path(__file__).resolve().parents[1] / "docs" / "search.md"
BEGIN, END = "<!-- modules:begin -->", "<!-- modules:end -->"


def test_readme_module_table_matches_registry():
    text = README.read_text(encoding="utf-8")
    assert BEGIN in text and END in text, "README lost its generated module table markers"
    table = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert table == module_table().strip(), (
        "README module table is stale: regenerate it with `python scripts/update_readme_table.py`")


def test_readme_starts_with_the_two_commands():
    head = README.read_text(encoding="utf-8")[:400]
    assert "make run" in head and "make test" in head


def test_search_doc_knob_table_matches_registry():
    text = SEARCH_DOC.read_text(encoding="utf-8")
    begin, end = "<!-- knobs:begin -->", "<!-- knobs:end -->"
    assert begin in text and end in text, "docs/search.md lost its generated knob table markers"
    table = text.split(begin, 1)[1].split(end, 1)[0].strip()
    assert table == knob_table().strip(), (
        "docs/search.md knob table is stale: regenerate it with `python scripts/update_readme_table.py`")


def test_every_module_knob_is_listed_in_both_tables():
    readme = README.read_text(encoding="utf-8").split(BEGIN, 1)[1].split(END, 1)[0]
    knobs = knob_table()
    declared = 0
    for role in ROLES:
        for spec in REGISTRY.specs(role):
            row = next(line for line in readme.splitlines() if line.startswith(f"| {role} | `{spec.name}` |"))
            for k in spec.knobs:
                declared += 1
                assert f"`{k.name}`" in row, f"{role} {spec.name}: knob {k.name} missing from the README table"
                assert f"| {role} `{spec.name}` | " in knobs and k.range_text() in knobs
    assert declared >= 20  # retrievers, managers and the turn encoder declare knobs

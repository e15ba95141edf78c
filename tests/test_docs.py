"""The generated tables of the docs — the module table of docs/space.md and the knob table of
docs/search.md — come from the registry and must not drift from it; the README starts with the two
commands."""
from __future__ import annotations

from pathlib import Path

from memarch.cli.space import knob_table, module_table
from memarch.pipeline.registry import REGISTRY, ROLES

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SPACE_DOC = ROOT / "docs" / "space.md"
SEARCH_DOC = ROOT / "docs" / "search.md"
BEGIN, END = "<!-- modules:begin -->", "<!-- modules:end -->"


def _between(text: str, begin: str, end: str) -> str:
    return text.split(begin, 1)[1].split(end, 1)[0].strip()


def test_space_doc_module_table_matches_registry():
    text = SPACE_DOC.read_text(encoding="utf-8")
    assert BEGIN in text and END in text, "docs/space.md lost its generated module table markers"
    assert _between(text, BEGIN, END) == module_table().strip(), (
        "docs/space.md module table is stale: regenerate it with `python scripts/update_readme_table.py`")


def test_the_module_table_lives_in_one_place():
    """The README links to the table (docs/space.md) instead of holding a second copy."""
    assert BEGIN not in README.read_text(encoding="utf-8"), (
        "README.md holds the generated module table again: it lives in docs/space.md")
    assert "docs/space.md" in README.read_text(encoding="utf-8")


def test_readme_starts_with_the_two_commands():
    head = README.read_text(encoding="utf-8")[:400]
    assert "make run" in head and "make test" in head


def test_search_doc_knob_table_matches_registry():
    text = SEARCH_DOC.read_text(encoding="utf-8")
    begin, end = "<!-- knobs:begin -->", "<!-- knobs:end -->"
    assert begin in text and end in text, "docs/search.md lost its generated knob table markers"
    assert _between(text, begin, end) == knob_table().strip(), (
        "docs/search.md knob table is stale: regenerate it with `python scripts/update_readme_table.py`")


def test_every_module_knob_is_listed_in_both_tables():
    modules = _between(SPACE_DOC.read_text(encoding="utf-8"), BEGIN, END)
    knobs = knob_table()
    declared = 0
    for role in ROLES:
        for spec in REGISTRY.specs(role):
            row = next(line for line in modules.splitlines() if line.startswith(f"| {role} | `{spec.name}` |"))
            for k in spec.knobs:
                declared += 1
                assert f"`{k.name}`" in row, f"{role} {spec.name}: knob {k.name} missing from the docs/space.md table"
                assert f"| {role} `{spec.name}` | " in knobs and k.range_text() in knobs
    assert declared >= 20  # retrievers, managers and the turn encoder declare knobs

"""The README's module table is generated from the registry and must not drift from it."""
from __future__ import annotations

from pathlib import Path

from memarch.cli.space import module_table

README = Path(__file__).resolve().parents[1] / "README.md"
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

"""Regenerate the registry-generated tables of the docs: the module table of docs/space.md
(`memarch space --markdown`; the README links to it) and the knob table of docs/search.md.
tests/test_docs.py fails when either drifts from the registry."""
from __future__ import annotations

import sys
from pathlib import Path

from memarch.cli.space import knob_table, module_table
from memarch.pipeline.files import atomic_write_text

ROOT = Path(__file__).resolve().parents[1]
TABLES = [(ROOT / "docs" / "space.md", "<!-- modules:begin -->", "<!-- modules:end -->", module_table),
          (ROOT / "docs" / "search.md", "<!-- knobs:begin -->", "<!-- knobs:end -->", knob_table)]


def main() -> int:
    for path, begin, end, table in TABLES:
        text = path.read_text(encoding="utf-8")
        if begin not in text or end not in text:
            print(f"{path}: markers {begin} / {end} not found", file=sys.stderr)
            return 2
        head, rest = text.split(begin, 1)
        _, tail = rest.split(end, 1)
        atomic_write_text(path, f"{head}{begin}\n{table()}\n{end}{tail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Regenerate the README's module table from the registry (`memarch space --markdown`)."""
from __future__ import annotations

import sys
from pathlib import Path

from memarch.cli.space import module_table
from memarch.pipeline.files import atomic_write_text

BEGIN, END = "<!-- modules:begin -->", "<!-- modules:end -->"


def main() -> int:
    readme = Path(__file__).resolve().parents[1] / "README.md"
    text = readme.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        print(f"{readme}: markers {BEGIN} / {END} not found", file=sys.stderr)
        return 2
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    atomic_write_text(readme, f"{head}{BEGIN}\n{module_table()}\n{END}{tail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

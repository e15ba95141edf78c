"""The README stays a README (short, a link to every doc page) and no link of the docs is dead: every
relative link of README.md and docs/*.md points to a file that exists, and a link with a #anchor to
a heading of the page it names (GitHub's anchors: lowercase, spaces to '-', punctuation other than
'-' and '_' dropped, '-1', '-2', ... on repeated headings)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
MAX_README_LINES = 250
FENCE = re.compile(r"^\s*(```+|~~~+)")
INLINE_CODE = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.S)
LINK = re.compile(r"\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _prose(text: str) -> list[tuple[int, str]]:
    """(first line, paragraph) of the text outside code blocks, inline code blanked out."""
    out, para, start, fence = [], [], 0, None
    for n, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if fence:
            if m and line.strip().startswith(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
        if m or not line.strip():
            if para:
                out.append((start, "\n".join(para)))
            para = []
            continue
        if not para:
            start = n
        para.append(line)
    if para:
        out.append((start, "\n".join(para)))
    return [(n, INLINE_CODE.sub(" ", p)) for n, p in out]


def slug(heading: str) -> str:
    """GitHub's anchor of a heading's text."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor GitHub gives the headings of ``path`` (outside code blocks)."""
    seen: dict[str, int] = {}
    fence = None
    for line in path.read_text(encoding="utf-8").splitlines():
        m = FENCE.match(line)
        if fence:
            fence = None if m and line.strip().startswith(fence) else fence
            continue
        if m:
            fence = m.group(1)
            continue
        h = HEADING.match(line)
        if h:
            base = slug(h.group(2))
            seen[base] = seen.get(base, 0) + 1
    out = set()
    for base, count in seen.items():
        out.add(base)
        out.update(f"{base}-{k}" for k in range(1, count))
    return out


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every Markdown link of ``path`` outside code."""
    found = []
    for start, para in _prose(path.read_text(encoding="utf-8")):
        for m in LINK.finditer(para):
            found.append((start + para.count("\n", 0, m.start()), m.group(1)))
    return found


def dead(path: Path, target: str) -> str | None:
    """Why the link ``target`` of ``path`` is dead (None: it is not, or it leaves the repository)."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("//"):
        return None  # https:, mailto:, ...
    file, _, anchor = target.partition("#")
    dest = path if not file else (path.parent / file).resolve()
    if not dest.exists():
        return f"{file} does not exist"
    if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
        name = dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest.name
        return f"{name} has no heading with the anchor #{anchor}"
    return None


def test_readme_stays_short():
    n = len(README.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_README_LINES, (
        f"README.md has {n} lines (at most {MAX_README_LINES}): reference and measurements go to docs/")


def test_readme_links_every_doc_page():
    linked = {(README.parent / t.partition("#")[0]).resolve() for _, t in links(README) if t.partition("#")[0]}
    missing = [p.name for p in PAGES[1:] if p.resolve() not in linked]
    assert not missing, f"README.md links no docs page {', '.join(missing)}: add it to its links"


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_no_dead_link(path):
    bad = [f"{path.relative_to(ROOT)}:{n}: ({t}) {why}" for n, t in links(path) for why in [dead(path, t)] if why]
    if bad:
        pytest.fail("dead links:\n" + "\n".join(bad), pytrace=False)


def test_the_link_checker_itself(tmp_path):
    page = tmp_path / "a.md"
    (tmp_path / "b.md").write_text("# B page\n\n## Full space: knobs (`--space full`)\n\n## Twice\n\n## Twice\n"
                                   "```\n# not a heading\n```\n", encoding="utf-8")
    page.write_text("\n".join([
        "# A", "",
        "[ok](b.md) [ok](b.md#full-space-knobs---space-full) [ok](b.md#twice-1) [ok](#a) [web](https://x.org/y)",
        "[no file](c.md) [no anchor](b.md#nope) [code heading](b.md#not-a-heading) `[in code](c.md)`",
        "```", "[in a block](c.md)", "```",
    ]), encoding="utf-8")
    assert slug("Optuna's samplers as baselines") == "optunas-samplers-as-baselines"
    assert slug("`compile --optimize-prompts`: after") == "compile---optimize-prompts-after"
    assert anchors(tmp_path / "b.md") == {"b-page", "full-space-knobs---space-full", "twice", "twice-1"}
    got = [(t, dead(page, t)) for _, t in links(page)]
    assert [t for t, why in got if why is None] == ["b.md", "b.md#full-space-knobs---space-full", "b.md#twice-1",
                                                    "#a", "https://x.org/y"]
    assert [t for t, why in got if why] == ["c.md", "b.md#nope", "b.md#not-a-heading"]

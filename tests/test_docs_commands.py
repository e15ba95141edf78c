"""Docs that cannot drift: every `memarch ...` command line in README.md and docs/*.md (in code
blocks and inline code) names a subcommand that exists and only options that subcommand has,
checked against the real argparse parser; and every ```python snippet of the README and of
docs/python_api.md runs."""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from memarch.cli import build_parser, is_renamed

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_FENCES = {"", "bash", "sh", "shell", "console"}  # fences whose lines may be commands
FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w+-]*)")
INLINE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
# `memarch ...`, `.venv/bin/memarch ...`, `python -m memarch ...` (a word follows: not `memarch:`)
PROGRAM = re.compile(r"^(?:\S*/)?(?:python3? -m )?memarch\s+(?=[\w-])")
FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
SNIPPETS_TESTED_ELSEWHERE = {  # README section -> the test that runs its python snippet
    "## Use the compiled memory in your app": ROOT / "tests" / "app" / "test_memory_app.py",
}
# the pages whose ```python snippets run here, each in its own session: at least this many each
SNIPPET_PAGES = {ROOT / "README.md": 1, ROOT / "docs" / "python_api.md": 4}
# the pages that must hold command lines (the extraction reaches each of them)
COMMAND_PAGES = {"README.md", "cli.md", "space.md", "search.md", "data.md", "benchmarks.md"}


@dataclass(frozen=True)
class Command:
    """One command line of a doc: where it is and its text (continuations joined)."""

    path: Path
    line: int
    text: str

    def where(self) -> str:
        return f"{self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path}:{self.line}"


def _strip_comment(line: str) -> str:
    """``line`` without its shell comment (`` # ...`` outside quotes)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line


def _shell_commands(path: Path, start: int, lines: list[str]):
    """The memarch commands of a shell code block whose first line is line ``start``."""
    i = 0
    while i < len(lines):
        first, text = start + i, _strip_comment(lines[i]).rstrip()
        while text.endswith("\\") and i + 1 < len(lines):  # a line continuation
            i += 1
            text = text[:-1].rstrip() + " " + _strip_comment(lines[i]).strip()
        i += 1
        for part in re.split(r"\s*;\s+|\s(?:&&|\|\||\|)\s", text):
            part = re.sub(r"^\s*(?:\$\s+)?(?:\w+=\S*\s+)*", "", part)  # prompt, VAR=value
            if PROGRAM.match(part):
                yield Command(path, first, part.strip())


def _inline_commands(path: Path, start: int, paragraph: str, subcommands: set[str]):
    """The memarch commands in the inline code of a paragraph starting at line ``start``: spans that
    start with ``memarch``, or with a subcommand name and name an option (`compile --space full`)."""
    for m in INLINE.finditer(paragraph):
        text = " ".join(m.group(2).split())
        first = text.split(" ", 1)[0]
        if PROGRAM.match(text) or (first in subcommands and " -" in text):
            yield Command(path, start + paragraph.count("\n", 0, m.start()), text)


def extract(path: Path, text: str | None = None, subcommands: set[str] | None = None) -> list[Command]:
    """Every memarch command line of a Markdown file, in order."""
    lines = (path.read_text(encoding="utf-8") if text is None else text).splitlines()
    subcommands = _subcommands(build_parser()) if subcommands is None else subcommands
    found: list[Command] = []
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence:  # a code block, to the closing fence of the same kind
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith(fence.group(1)):
                j += 1
            if fence.group(2).lower() in SHELL_FENCES:
                found += _shell_commands(path, i + 2, lines[i + 1:j])
            i = j + 1
            continue
        j = i  # a paragraph: inline code may run over its line breaks, not over a blank line
        while j < len(lines) and lines[j].strip() and not FENCE.match(lines[j]):
            j += 1
        found += _inline_commands(path, i + 1, "\n".join(lines[i:j]), subcommands)
        i = max(j, i + 1)
    return found


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _subcommands(parser: argparse.ArgumentParser) -> set[str]:
    return set(_subparsers(parser))


def _words(text: str) -> list[str]:
    return [w.strip("[](){}`,;:") for w in text.replace("\\|", " | ").split()]


def _placeholder(word: str) -> bool:
    """FILE, COMMAND, <name>, ..., PARTS...: text standing for what the reader fills in."""
    core = word.strip(".")
    return not core or core.isupper() or word.startswith("<") or "..." in word or core == "|"


def problems(cmd: Command, parser: argparse.ArgumentParser) -> list[str]:
    """What is wrong with one command line against the parser (empty: it parses)."""
    words = _words(PROGRAM.sub("", cmd.text) if PROGRAM.match(cmd.text) else cmd.text)
    top = {o for a in parser._actions for o in a.option_strings}
    while words and words[0] in top:  # `memarch -v compile ...`
        words.pop(0)
    if not words or _placeholder(words[0]):
        return []
    path, current, rest = [], parser, words
    while rest and _subparsers(current):
        word, choices = rest[0], _subparsers(current)
        if word.startswith("-") or _placeholder(word):
            break
        names = word.split("/")  # `data check/stats/convert`
        unknown = [n for n in names if n not in choices]
        if unknown:
            where = " ".join(["memarch", *path]) or "memarch"
            return [f"`{where}` has no subcommand {unknown[0]!r} (it has {', '.join(sorted(choices))})"]
        rest = rest[1:]
        path.append(names[0])
        if len(names) > 1:  # alternatives: the options must suit each of them
            return [p for n in names for p in problems(Command(cmd.path, cmd.line, " ".join(
                ["memarch", *path[:-1], n, *rest])), parser)]
        current = choices[names[0]]
    actions = {o: a for a in current._actions for o in a.option_strings}
    name, out = " ".join(["memarch", *path]), []
    for flag in FLAG.findall(" ".join(rest)):
        action = actions.get(flag)
        if action is None:
            out.append(f"`{name}` has no option {flag}")
        elif is_renamed(action):
            out.append(f"`{name}` {flag}: {action.line.split(': ', 1)[1]}")
    for k, word in enumerate(rest):  # the value after an option, when it is not a placeholder
        action = actions.get(word.split("=", 1)[0]) if word.startswith("-") else None
        if action is None or action.nargs == 0 or is_renamed(action) or ("=" not in word and k + 1 == len(rest)):
            continue
        value = word.split("=", 1)[1] if "=" in word else rest[k + 1]
        problem = _bad_value(action, value)
        if problem:
            out.append(f"`{name}` {action.option_strings[-1]} {value}: {problem}")
    return out


def _bad_value(action: argparse.Action, value: str) -> str | None:
    """Why ``value`` cannot be given to ``action`` (None: it can, or it stands for what the reader
    fills in). ``a|b`` names alternatives: each is checked."""
    if value.startswith("-") and not value.lstrip("-")[:1].isdigit():
        return None  # the option's value was left out here (a flag of a usage line follows)
    for alt in value.strip('"\'').split("|"):
        if _placeholder(alt) or not alt or alt.islower() and len(alt) == 1:
            continue
        if action.choices is not None and alt not in action.choices:
            return f"expected one of {', '.join(map(str, action.choices))}"
        if action.type in (int, float):
            try:
                action.type(alt)
            except ValueError:
                return f"expected a number ({action.type.__name__})"
        directory = action.metavar == "DIR" or re.match(r"^[\w ]*\bdirectory\b", action.help or "")
        if directory and re.search(r"\.(json|jsonl|npz|txt|png|csv)$", alt):
            return f"{action.option_strings[-1]} is a directory (DIR), not a file"
    return None


def _all_commands() -> list[Command]:
    subcommands = _subcommands(build_parser())
    return [c for path in DOCS for c in extract(path, subcommands=subcommands)]


def test_every_documented_command_line_parses():
    parser = build_parser()
    commands = _all_commands()
    assert len(commands) >= 60, f"only {len(commands)} memarch command lines found: is the extraction broken?"
    assert {c.path.name for c in commands} >= COMMAND_PAGES, COMMAND_PAGES - {c.path.name for c in commands}
    bad = [f"{c.where()}: {p}\n    {c.text}" for c in commands for p in problems(c, parser)]
    if bad:  # pytest.fail: an assert message would be cut after a few lines
        pytest.fail(f"{len(bad)} documented command line(s) do not match the CLI:\n" + "\n".join(bad), pytrace=False)


def test_no_doc_names_a_renamed_option():
    """``--objective`` (now ``--metric``) is refused on every command: no doc may name it, even in prose."""
    old = re.compile(r"(?<![\w-])--objective(?![\w-])")
    bad = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}" for p in DOCS
           for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if old.search(line)]
    if bad:
        pytest.fail("docs still name --objective (now --metric):\n" + "\n".join(bad), pytrace=False)


def test_the_checker_itself():
    """Continuations, inline code over a line break, placeholders, sub-subcommands, renamed options."""
    doc = "\n".join([
        "Run `memarch evaluate --context-budget 100` or `memarch evaluate --budget 100` or",   # 1
        "`memarch compile --benchmark generated",                                            # 2
        "--no-such-thing`; also `compile --space full` and `data check/stats FILE --strict`.", # 3
        "",
        "```bash",                                                                           # 5
        "$ memarch landscape build --benchmark generated \\",                                # 6
        "    --out x.npz   # a comment --not-a-flag",                                        # 7
        "memarch data nosuch FILE && echo --ignored",                                        # 8
        "memarch COMMAND --whatever",                                                        # 9
        "MEMARCH_CACHE_DIR=/tmp memarch compare --objective answer_span; memarch compile --out=p.json",  # 10
        "```",
        "```python",
        "subprocess.run(['memarch', 'evaluate', '--nope'])",
        "```",
        "Prose memarch compile --nope is not code; `memarch.Memory` is not a command.",
    ])
    parser = build_parser()
    cmds = extract(Path("doc.md"), doc, _subcommands(parser))
    got = [(c.line, c.text, problems(c, parser)) for c in cmds]
    lines = [g[0] for g in got]
    assert lines == [1, 1, 2, 3, 3, 6, 8, 9, 10, 10], got
    assert got[0][2] == [] and "is now --context-budget" in got[1][2][0]
    assert got[2][2] == ["`memarch compile` has no option --no-such-thing"]
    assert got[3][2] == []                                               # bare `compile --space full`
    assert got[4][2] == ["`memarch data stats` has no option --strict"]  # check has it, stats does not
    assert got[5][1] == "memarch landscape build --benchmark generated --out x.npz" and got[5][2] == []
    assert "no subcommand 'nosuch'" in got[6][2][0] and got[7][2] == []
    assert "is now --metric" in got[8][2][0]
    assert got[9][2] == ["`memarch compile` --out p.json: --out is a directory (DIR), not a file"]
    assert [n for _, n in _benchmark_lists("`--benchmark` (generated, `locomo`, babi or textworld); (a, b, c)")] == [
        ["generated", "locomo", "babi", "textworld"]]


# -- the python snippets of the README and docs/python_api.md ---------------------------------------
def _snippets(path: Path = ROOT / "README.md") -> list[tuple[int, str, str]]:
    """(first code line, section, code) of each ```python block of ``path``."""
    out, section, lines, i = [], "", path.read_text(encoding="utf-8").splitlines(), 0
    while i < len(lines):
        if lines[i].startswith("## "):
            section = lines[i].strip()
        if lines[i].strip() == "```python":
            j = lines.index("```", i + 1)
            out.append((i + 2, section, "\n".join(lines[i + 1:j]) + "\n"))
            i = j
        i += 1
    return out


RUNNER = """
import json, os, sys
for k, (page, snippets) in enumerate(json.load(open(sys.argv[1]))):
    os.makedirs(f"page{k}")
    os.chdir(f"page{k}")  # one session per page, each in an empty directory of its own
    namespace = {"__name__": "__main__"}
    for line, code in snippets:
        exec(compile("\\n" * (line - 1) + code, page, "exec"), namespace)
    print(page, "snippets ran")
    os.chdir("..")
"""


def test_every_readme_python_snippet_runs(tmp_path):
    """Per page (README.md, docs/python_api.md) in order, in one namespace (as a reader pastes them
    into one session), in an empty cwd, offline; a failure's traceback names the page and line."""
    readme = ROOT / "README.md"
    for section, test in SNIPPETS_TESTED_ELSEWHERE.items():
        assert section in readme.read_text(encoding="utf-8"), f"README.md lost its section {section!r}"
        assert section in test.read_text(encoding="utf-8"), f"{test} no longer runs the snippet of {section!r}"
    todo = []
    for path, least in SNIPPET_PAGES.items():
        snippets = _snippets(path)
        run = [(line, code) for line, section, code in snippets
               if path != readme or section not in SNIPPETS_TESTED_ELSEWHERE]
        assert len(run) >= least, f"{path.relative_to(ROOT)}: {len(run)} python snippets to run, expected >= {least}"
        if path == readme:
            assert len(run) == len(snippets) - len(SNIPPETS_TESTED_ELSEWHERE)
        todo.append((str(path.relative_to(ROOT)), run))
    (tmp_path / "snippets.json").write_text(json.dumps(todo))
    (tmp_path / "runner.py").write_text(RUNNER)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MEMARCH_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, str(tmp_path / "runner.py"), str(tmp_path / "snippets.json")], cwd=cwd,
                       env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-4000:]
    for page, _ in todo:
        assert f"{page} snippets ran" in p.stdout, (page, p.stdout[-2000:], p.stderr[-4000:])


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_every_doc_code_fence_is_closed(path):
    """An unclosed fence would hide the rest of a file from the command check."""
    fences = [ln for ln in path.read_text(encoding="utf-8").splitlines() if FENCE.match(ln)]
    assert len(fences) % 2 == 0, f"{path.name}: odd number of code fences"


def _benchmark_lists(text: str):
    """The parenthesised lists of three or more names that are all benchmark names."""
    from memarch.benchmarks import BENCHMARKS

    for m in re.finditer(r"\(([^()]*)\)", text):
        names = [n.strip(" `\n") for n in re.split(r",|\bor\b|\band\b", m.group(1)) if n.strip(" `\n")]
        if len(names) >= 3 and all(n in BENCHMARKS for n in names):
            yield m.start(), names


def test_every_list_of_the_benchmarks_names_all_of_them():
    """`--benchmark` (generated, locomo, babi, textworld) was two short: a list is all of them or
    says it is partial (e.g., ...)."""
    from memarch.benchmarks import BENCHMARKS

    bad = []
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for start, names in _benchmark_lists(text):
            if set(names) != set(BENCHMARKS):
                bad.append(f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, start) + 1}: ({', '.join(names)}) "
                           f"lacks {', '.join(b for b in BENCHMARKS if b not in names)}")

    def walk(parser, name):
        for action in parser._actions:
            for start, names in _benchmark_lists(action.help or ""):
                if set(names) != set(BENCHMARKS):
                    bad.append(f"`{name}` {'/'.join(action.option_strings)} help: ({', '.join(names)})")
            if isinstance(action, argparse._SubParsersAction):
                for sub, p in action.choices.items():
                    walk(p, f"{name} {sub}")
        for start, names in _benchmark_lists(parser.description or ""):
            if set(names) != set(BENCHMARKS):
                bad.append(f"`{name}` description: ({', '.join(names)})")

    walk(build_parser(), "memarch")
    if bad:
        pytest.fail("partial lists of the benchmarks:\n" + "\n".join(bad), pytrace=False)

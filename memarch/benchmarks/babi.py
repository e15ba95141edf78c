"""bAbI (Weston et al. 2015), tasks 1-20, as a stream benchmark: each story is a namespace, the
statements between two questions form a session, and supporting-fact line numbers are the gold
evidence. A question is asked exactly where it stands in the story (later lines may change its
answer: "John moved to the bedroom")."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterable

from memarch.benchmarks.base import Benchmark, Dialogue, Question, data_root
from memarch.errors import DataError
from memarch.pipeline.episodes import Episode, Turn

_FILE = re.compile(r"qa(\d+)_(.+)_(train|test)\.txt")
_LINE = re.compile(r"(\d+) (.*)")


def task_files(directory: Path, part: str) -> dict[int, Path]:
    """``{task number: file}`` for one part (train/test) of an ``en/`` directory."""
    out = {}
    for f in directory.glob(f"qa*_{part}.txt"):
        m = _FILE.fullmatch(f.name)
        if m:
            out[int(m.group(1))] = f
    return out


def resolve_dir(data: str | os.PathLike | None) -> Path:
    """The directory of ``qaN_*_{train,test}.txt`` files: ``data`` itself, ``data/en`` or
    ``data/babi/en`` (default ``$MEMARCH_DATA_DIR``)."""
    base = data_root(data, "babi", "--data PATH to the bAbI directory")
    for d in (base, base / "en", base / "babi" / "en"):
        if d.is_dir() and any(d.glob("qa*_*.txt")):
            return d
    raise DataError(f"{base}: no bAbI task files found (expected qa1_single-supporting-fact_test.txt ... "
                    "in it or in its en/ subdirectory)")


def parse_stories(lines: Iterable[str], task: int, task_name: str, source: str) -> list[Dialogue]:
    dialogues: list[Dialogue] = []
    block: list[Turn] = []
    sessions: list[Episode] = []
    questions: list[Question] = []
    story = -1

    def close_story() -> None:
        if story >= 0 and (sessions or questions):
            dialogues.append(Dialogue(namespace=f"babi-{task}-{story}", sessions=list(sessions),
                                      questions=list(questions), metadata={"task": task}))

    for lineno, raw in enumerate(lines, 1):
        raw = raw.rstrip("\n")
        if not raw.strip():
            continue
        m = _LINE.fullmatch(raw)
        if not m:
            raise DataError(f"{source}:{lineno}: expected 'ID text' or 'ID question<TAB>answer<TAB>ids'")
        num, body = int(m.group(1)), m.group(2)
        if num == 1:  # ids restart: a new story
            close_story()
            story += 1
            sessions, questions, block = [], [], []
        ns = f"babi-{task}-{story}"
        if "\t" in body:
            parts = body.split("\t")
            if len(parts) < 3:
                raise DataError(f"{source}:{lineno}: question line needs question<TAB>answer<TAB>supporting ids")
            if block:
                sessions.append(Episode(id=f"{ns}/s{len(sessions)}", turns=block, namespace=ns,
                                        metadata={"task": task}))
                block = []
            questions.append(Question(
                id=f"{ns}/L{num}", text=parts[0].strip(), answer=parts[1].strip().replace(",", ", "),
                evidence=[f"L{i}" for i in parts[2].split()], category=task_name,
                ask_after=len(sessions) - 1, metadata={"task": task}))
        else:
            block.append(Turn(id=f"L{num}", speaker="story", text=body.strip()))
    close_story()
    return dialogues


class BAbI(Benchmark):
    """bAbI tasks as stories of sessions.

    Example::

        bench = BAbI("../shared/data/babi", tasks=[1, 2])
        bench.stats()["questions"]   # 2000

    Args:
        data: the bAbI directory (with ``en/``) or the ``en/`` directory itself.
        tasks: task numbers 1-20 (default all).
        part: ``"test"`` (default) or ``"train"``.
        stories: keep the first N stories of each task (quick runs).
    """

    name = "babi"

    def __init__(self, data: str | os.PathLike | None = None, *, tasks: Iterable[int] | None = None,
                 part: str = "test", stories: int | None = None, **split_options: Any):
        directory = resolve_dir(data)
        files = task_files(directory, part)
        wanted = sorted(set(int(t) for t in tasks)) if tasks is not None else list(range(1, 21))
        bad = [t for t in wanted if t not in files]
        if bad:
            raise DataError(f"{directory}: no bAbI {part} file for task(s) {bad} "
                            f"(expected qa<N>_<name>_{part}.txt)")
        dialogues: list[Dialogue] = []
        for t in wanted:
            name = _FILE.fullmatch(files[t].name).group(2)
            with open(files[t], encoding="utf-8") as fh:
                dialogues.extend(parse_stories(fh, t, f"qa{t}-{name}", str(files[t]))[:stories])
        self.path = directory
        self.categories = tuple(sorted({q.category for d in dialogues for q in d.questions}))
        super().__init__(dialogues, **split_options)

"""Your own data as a benchmark: a memarch data file (JSONL, docs/data.md) of dialogues is a stream
benchmark, one of recorded agent tasks an offline collect -> deploy benchmark (``jsonl_tasks``).
Splits, metrics and attribution are the ones every benchmark has."""
from __future__ import annotations

import logging
import os
from typing import Any

from memarch.benchmarks.formats import jsonl_tasks
from memarch.benchmarks.base import Benchmark
from memarch.benchmarks.formats.jsonl_check import DataFile, read_data
from memarch.benchmarks.formats.jsonl_records import dialogue_from_record
from memarch.errors import DataError

log = logging.getLogger(__name__)


def load_checked(data: str | os.PathLike | None) -> DataFile:
    """The data file read and checked; DataError (one line) when it has errors, warnings logged."""
    if data is None:
        raise DataError("jsonl: no data file given (pass --data FILE.jsonl; format: docs/data.md)")
    checked = read_data(data, reuse_checks=True)
    if checked.errors:
        first = checked.errors[0]
        more = len(checked.problems) - 1
        raise DataError(f"{checked.path}:{first.line}: {first.message}"
                        + (f" (and {more} more problem(s): memarch data check {checked.path})" if more else ""))
    if checked.warnings:
        first = checked.warnings[0]
        log.warning("%s: %d warning(s), loaded anyway (memarch data check lists them); first, line %d: %s",
                    checked.path, len(checked.warnings), first.line, first.message)
    return checked


def _categories(checked: DataFile, found: list[str]) -> tuple[str, ...]:
    declared = list((checked.meta or {}).get("categories", []))
    return tuple(declared + sorted(c for c in set(found) if c not in declared))


class JsonlBenchmark(Benchmark):
    """Dialogues from a memarch data file, as a stream benchmark. A file of ``task`` records gives a
    `jsonl_tasks.JsonlTasks` instead (same name, same constructor).

    Example::

        bench = JsonlBenchmark("conversations.jsonl")      # or get_benchmark("jsonl", "conversations.jsonl")
        bench.split("search").stats()

    Args:
        data: the ``.jsonl`` file.
        conversations: keep only the first N dialogues (quick runs).
        tasks: keep only the first N tasks (a task file).
        mode, collect_share: the collect -> deploy settings of a task file.
        split_options: ``seed``, ``split_by``, ``fractions`` as for every benchmark.
    """

    name = "jsonl"

    def __new__(cls, data: str | os.PathLike | None = None, **options: Any):
        checked = load_checked(data)
        if checked.kind == "task":
            options.pop("conversations", None)
            return jsonl_tasks.JsonlTasks(checked, **options)
        self = super().__new__(cls)
        self._checked = checked
        return self

    def __init__(self, data: str | os.PathLike | None = None, *, conversations: int | None = None,
                 **split_options: Any):
        for knob in ("tasks", "mode", "collect_share"):
            if knob in split_options:
                raise ValueError(f"{knob} applies to a file of agent tasks; {data} holds dialogues")
        checked = self.__dict__.pop("_checked")
        dialogues = [dialogue_from_record(r) for _, r in checked.records][:conversations]
        self.path = checked.path
        self.problems = checked.problems
        self.categories = _categories(checked, [q.category for d in dialogues for q in d.questions])
        super().__init__(dialogues, **split_options)

"""Recorded agent tasks from a memarch data file, as an offline collect -> deploy benchmark: no
environment is played. Collection writes each task's recorded trajectory; a deployed task scores 1
when memory returns a trajectory relevant to it (hit within the read's top_k and context budget)."""
from __future__ import annotations

from typing import Any, ClassVar

from memarch.benchmarks.base import AgentTask, TaskBenchmark
from memarch.benchmarks.formats.jsonl_check import DataFile
from memarch.benchmarks.formats.jsonl_records import task_from_record
from memarch.pipeline.episodes import Episode


class JsonlTasks(TaskBenchmark):
    """Agent tasks of a data file; built by ``get_benchmark("jsonl", FILE)`` when the file holds
    ``task`` records.

    Example::

        bench = get_benchmark("jsonl", "tasks.jsonl", mode="dynamic")
        collect, deploy = bench.split("search").phases()

    A deployed task's score is 1.0 when an item of the read cites (``episode_id`` or source ids) a
    task relevant to it that memory holds by then, else 0.0; the trajectory the agent "plays" is
    always the recorded one, so ``success_rate`` is the recorded outcomes' rate (the same for every
    architecture) and the metric (``task_score``) is what memory changes. Relevant: the task's
    ``relevant`` ids, else the tasks of its category in its namespace; of those only the ones
    written before it count (collected, or deployed earlier in ``dynamic`` mode).

    Args:
        checked: the read data file (`memarch.benchmarks.formats.jsonl_check.read_data`).
        tasks: keep only the first N tasks (quick runs).
        mode: ``static`` (memory frozen while deployed) or ``dynamic``.
        collect_share: share of a split's tasks collected before deployment.
    """

    name: ClassVar[str] = "jsonl"
    family: ClassVar[str] = "experience"

    def __init__(self, checked: DataFile, *, tasks: int | None = None, mode: str = "static",
                 collect_share: float = 0.5, **split_options: Any):
        loaded = [task_from_record(r) for _, r in checked.records][:tasks]
        super().__init__([t for t, _ in loaded], mode=mode, collect_share=collect_share, **split_options)
        self.path = checked.path
        self.problems = checked.problems
        self.recorded: dict[str, Episode] = {t.id: e for t, e in loaded}
        self.relevant: dict[str, list[str]] = {r["id"]: list(r["relevant"]) for _, r in checked.records
                                               if "relevant" in r}
        declared = list((checked.meta or {}).get("categories", []))
        found = sorted({str(t.metadata["category"]) for t, _ in loaded if t.metadata.get("category")})
        self.categories = tuple(declared + [c for c in found if c not in declared])
        self._scores: dict[str, float] = {}

    def _relevant(self, task: AgentTask) -> list[str]:
        if task.id in self.relevant:
            return self.relevant[task.id]
        category = task.metadata.get("category")
        if not category:
            return []
        return [t.id for t in self.tasks
                if t.id != task.id and t.namespace == task.namespace and t.metadata.get("category") == category]

    def _written_before(self, task: AgentTask) -> set[str]:
        collect, deploy = self.phases()
        written = {t.id for t in collect}
        if self.mode == "dynamic":
            for t in deploy:
                if t.id == task.id:
                    break
                written.add(t.id)
        return written

    def gold_sources(self, task: AgentTask) -> list[str]:
        """The relevant tasks memory holds when ``task`` is deployed (attribution's gold)."""
        written = self._written_before(task)
        return [rid for rid in self._relevant(task) if rid in written]

    def attempt(self, task: AgentTask, context: str | None, retrieval: Any = None) -> Episode:
        """The recorded trajectory; when deployed with memory, notes whether the read hit."""
        if retrieval is not None:
            cited = {sid for s in retrieval.items for sid in s.item.cited_ids()}
            self._scores[task.id] = 1.0 if cited & set(self.gold_sources(task)) else 0.0
        else:
            self._scores[task.id] = 0.0
        return self.recorded[task.id]

    def score(self, task: AgentTask, episode: Episode) -> float:
        return self._scores.get(task.id, 0.0)

    def stats(self) -> dict[str, Any]:
        """Counts, with the deployed tasks that no architecture can score (no relevant task written
        before them) named, not hidden."""
        out = super().stats()
        _, deploy = self.phases()
        out["steps"] = sum(len(self.recorded[t.id].steps) for t in self.tasks)
        out["deploy_without_relevant_memory"] = sum(1 for t in deploy if not self.gold_sources(t))
        cats: dict[str, int] = {}
        for t in self.tasks:
            c = str(t.metadata.get("category", ""))
            cats[c] = cats.get(c, 0) + 1
        out["categories"] = dict(sorted(cats.items()))
        return out

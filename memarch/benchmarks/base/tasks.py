"""`TaskBenchmark`: the base of agent benchmarks under the collection -> deployment protocol (ALMA,
ANCHORS 3) — tasks instead of dialogues, split over tasks, and the declarations of that protocol."""
from __future__ import annotations

from types import MappingProxyType
from typing import Any, ClassVar, Mapping

from memarch.benchmarks.base.benchmark import COLLECT_DEPLOY, Benchmark
from memarch.benchmarks.base.data import AgentTask
from memarch.benchmarks.base.splits import SPLITS, bucket
from memarch.errors import MemarchError
from memarch.pipeline.episodes import Episode


class TaskBenchmark(Benchmark):
    """An agent benchmark under the collection -> deployment protocol.

    Subclasses fill ``self.tasks``, declare their ``name`` and implement :meth:`attempt` (run the
    agent on one task with an optional memory context, return the trajectory as an `Episode` with
    its outcome); they may override :meth:`score` and :meth:`gold_sources`. Splits are over tasks;
    inside a split the first ``collect_share`` of the tasks are collected (no memory read,
    trajectories written), the rest deployed.

    Declares (besides `Benchmark`'s): the ``experience`` family, the ``collect_deploy`` protocol,
    the ``task_score`` metric, no per-instance scoring (a collection phase, then tasks, scored as
    one), and the data a file export needs: ``recorded`` trajectories by task id (None: the agent
    plays live) and ``relevant`` task ids by task id.
    """

    name: ClassVar[str] = "tasks"
    family: ClassVar[str] = "experience"
    protocol: ClassVar[str] = COLLECT_DEPLOY
    metric: ClassVar[str | None] = "task_score"
    scores_per_instance: ClassVar[bool] = False
    recorded: Mapping[str, Episode] | None = None
    relevant: Mapping[str, list[str]] = MappingProxyType({})

    def __init__(self, tasks: list[AgentTask] | None = None, *, mode: str = "static",
                 collect_share: float = 0.5, **split_options: Any):
        if mode not in ("static", "dynamic"):
            raise MemarchError(f"mode must be 'static' (memory frozen while deployed) or 'dynamic', not {mode!r}")
        super().__init__([], split_by="dialogue", **split_options)
        self.tasks: list[AgentTask] = list(tasks or [])
        self.mode = mode
        self.collect_share = float(collect_share)

    @property
    def split_unit(self) -> str:
        """Agent benchmarks split over tasks (``split_by`` is the stream benchmarks' setting, unused)."""
        return "task"

    def attempt(self, task: AgentTask, context: str | None, retrieval: Any = None) -> Episode:
        """Play ``task`` with the memory ``context`` (None while collecting); ``retrieval`` is the
        structured read behind it (scored items), for agents that use more than the text."""
        raise NotImplementedError

    def score(self, task: AgentTask, episode: Episode) -> float:
        return 1.0 if episode.outcome == "success" else 0.0

    def gold_sources(self, task: AgentTask) -> list[str]:
        """Source ids (step or episode ids) memory should return for ``task``; enables attribution."""
        return []

    def split(self, name: str) -> "TaskBenchmark":
        if name == "all":
            return self
        if name not in SPLITS:
            raise MemarchError(f"unknown split {name!r}; expected one of {', '.join(SPLITS)} or all")
        return self._view(tasks=[t for t in self.tasks if bucket(self.seed, t.id, self.fractions) == name],
                          split_name=name)

    def limit(self, n: int | None) -> "TaskBenchmark":
        if n is None:
            return self
        return self._view(tasks=self.tasks[: int(n)])

    def phases(self) -> tuple[list[AgentTask], list[AgentTask]]:
        """(collection tasks, deployment tasks) of this split, disjoint, in a fixed order."""
        cut = int(round(len(self.tasks) * self.collect_share))
        return self.tasks[:cut], self.tasks[cut:]

    def stats(self) -> dict[str, Any]:
        collect, deploy = self.phases()
        return {"benchmark": self.name, "split": self.split_name, "tasks": len(self.tasks),
                "collect": len(collect), "deploy": len(deploy), "mode": self.mode}

"""`tool_manager` manager: the floor plus shortcut promotion with schema validation and
trajectory -> workflow promotion; the LM reflects on tools that keep failing."""
from __future__ import annotations

from typing import Any

import dspy

from memarch.modules.managers._budget_policies import compress
from memarch.modules.managers._floor import FloorManager, floor_knobs
from memarch.modules.managers._judge import Judge
from memarch.modules.managers._promotion import promote_workflows, review_shortcuts
from memarch.modules.managers._reflection import reflect
from memarch.modules.signatures.managers import CorrectMemory, GeneraliseMemories
from memarch.modules.stores.base import Store
from memarch.pipeline.episodes import Episode
from memarch.pipeline.registry import register
from memarch.pipeline.resources import Resources

TOOL_KINDS = ("shortcut", "workflow")


@register("manager", "tool_manager", rank=3, uses_lm=True, needs_embeddings=True,
          description="shortcut promotion + schema validation, trajectory -> workflow",
          knobs=floor_knobs(dedup=0.95, decay=1.0))
class ToolManager(FloorManager):
    """Curates reusable procedures (Voyager / AWM style).

    After each episode: shortcut candidates whose test invocation contradicts their input schema
    are tombstoned with the reason ("invalid shortcut: ..."); valid ones supported by
    ``shortcut_support`` successful episodes are marked ``fields["validated"]`` and boosted; a
    successful episode's trajectory that shares a pattern with an earlier success is promoted to a
    workflow. Periodically (LM): shortcuts and workflows that accompanied failures are reflected
    on (keep / revise / delete), then the floor's curation and audit.

    Example::

        manager = ToolManager(resources)
        store.add(manager.on_insert(items, store))
        manager.after_episode(episode, store)     # promotion and validation
        [it.fields.get("validated") for it in store.list(where={"kind": "shortcut"})]

    Config (beyond the floor's): ``shortcut_support`` (2), ``workflow_min_steps`` (2),
    ``workflow_coverage`` (0.6: the shared steps must cover this share of both trajectories),
    ``reflect_failures`` (2), ``max_reflections`` (5 a pass), ``compress_window`` (8 items),
    ``compress_ratio`` (0.5).

    Memory budget (``memory_budget``): over budget it compresses before it drops, oldest first.
    Experience memory: a trajectory whose pattern became a workflow folds into that workflow, any
    other becomes a shortcut of its bare actions. Conversation memory: runs of up to
    ``compress_window`` consecutive items of one session become one summary of at most
    ``compress_ratio`` of their words (LM: `GeneraliseMemories`; LM-free: the sentences with the
    most content words). Then the lowest utility is pruned.
    """

    def __init__(self, resources: Resources | None = None, **config: Any):
        super().__init__(resources, **config)
        self.shortcut_support = int(config.get("shortcut_support", 2))
        self.workflow_min_steps = int(config.get("workflow_min_steps", 2))
        self.workflow_coverage = float(config.get("workflow_coverage", 0.6))
        self.reflect_failures = int(config.get("reflect_failures", 2))
        self.max_reflections = int(config.get("max_reflections", 5))
        self.correct = dspy.Predict(CorrectMemory)
        self._corrector = Judge(self.correct, self.resources, self.actor)
        self.compress_window = int(config.get("compress_window", 8))
        self.compress_ratio = float(config.get("compress_ratio", 0.5))
        self.compressor = dspy.Predict(GeneraliseMemories)
        self._compressor = Judge(self.compressor, self.resources, self.actor)

    @property
    def budget_judge(self) -> Judge:
        return self._compressor

    def budget_steps(self) -> list:
        return [lambda *a: compress(self, *a)]

    def after_episode(self, episode: Episode, store: Store) -> None:
        ns = episode.namespace
        review_shortcuts(self, store, ns, min_support=self.shortcut_support)
        if episode.outcome == "success":
            promote_workflows(self, episode.id, store, ns, min_steps=self.workflow_min_steps,
                              min_coverage=self.workflow_coverage)
        super().after_episode(episode, store)

    def periodic(self, store: Store, namespace: str) -> None:
        reflect(self, self._corrector, store, namespace, min_failures=self.reflect_failures,
                limit=self.max_reflections, kinds=TOOL_KINDS)
        super().periodic(store, namespace)

"""`json_full` manager: the floor plus semantic and cross-type dedup (0.88), LM conflict
resolution (at most 5 pairs a run), reflection correction, cluster merge and
trajectory -> workflow promotion. Every LM step has an LM-free rule behind it."""
from __future__ import annotations

from typing import Any

import dspy

from memarch.modules.managers._budget_policies import merge_near_duplicates, resolve_key_conflicts
from memarch.modules.managers._conflicts import describe
from memarch.modules.managers._consolidation import clusters, merge_cluster
from memarch.modules.managers._floor import FloorManager, floor_knobs
from memarch.modules.managers._judge import Judge
from memarch.modules.managers._promotion import promote_workflows
from memarch.modules.managers._reflection import reflect
from memarch.modules.signatures.managers import CorrectMemory, GeneraliseMemories, ResolveConflict
from memarch.modules.stores.base import Store
from memarch.pipeline.episodes import Episode
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.registry import register
from memarch.pipeline.resources import Resources

DECISIONS = ("keep_new", "keep_old", "keep_both")


@register("manager", "json_full", rank=2, uses_lm=True, needs_embeddings=True,
          description="semantic + cross-type dedup 0.88, LM conflict resolution, reflection, cluster merge, "
                      "trajectory -> workflow",
          knobs=floor_knobs(dedup=0.88, decay=1.0))
class JsonFullManager(FloorManager):
    """The full curation preset of AutoMem over any store.

    On insert: near-duplicates at cosine >= 0.88 merge, across kinds too; a near-duplicate with
    the opposite outcome is a conflict the LM resolves (keep_new / keep_old / keep_both; at most
    ``max_conflicts`` per insert batch, the rest keep both, flagged). After a successful episode:
    trajectory -> workflow promotion. Periodically: reflection correction of memories that
    accompanied failures (LM: keep / revise / delete), cluster merge, then the floor's curation
    and audit.

    Example::

        manager = JsonFullManager(Resources(embedder=Embedder("hash"), lm=my_lm))
        store.add(manager.on_insert(items, store))
        manager.periodic(store, "default")

    Config (beyond the floor's): ``merge_threshold`` (0.9), ``max_conflicts`` (5),
    ``reflect_failures`` (failures that trigger a reflection, 2), ``max_reflections`` (5 a pass),
    ``workflow_min_steps`` (2),
    ``workflow_coverage`` (0.6: the shared steps must cover this share of both trajectories),
    ``budget_merge_threshold`` (0.85).

    Memory budget (``memory_budget``): over budget it first resolves conflicts (one value per
    key, the newest), then merges near-duplicates at cosine >= ``budget_merge_threshold``
    across kinds (LM: `GeneraliseMemories` writes the merged text; LM-free: the most useful member
    survives), and only then prunes the lowest utility.
    """

    dedup_threshold = 0.88
    cross_type = True

    def __init__(self, resources: Resources | None = None, **config: Any):
        super().__init__(resources, **config)
        self.merge_threshold = float(config.get("merge_threshold", 0.9))
        self.max_conflicts = int(config.get("max_conflicts", 5))
        self.reflect_failures = int(config.get("reflect_failures", 2))
        self.max_reflections = int(config.get("max_reflections", 5))
        self.workflow_min_steps = int(config.get("workflow_min_steps", 2))
        self.workflow_coverage = float(config.get("workflow_coverage", 0.6))
        self.resolve = dspy.Predict(ResolveConflict)
        self.correct = dspy.Predict(CorrectMemory)
        self._resolver = Judge(self.resolve, self.resources, self.actor)
        self._corrector = Judge(self.correct, self.resources, self.actor)
        self._conflict_budget = self.max_conflicts
        self.budget_merge_threshold = float(config.get("budget_merge_threshold", 0.85))
        self.merger = dspy.Predict(GeneraliseMemories)
        self._merger = Judge(self.merger, self.resources, self.actor)

    @property
    def budget_judge(self) -> Judge:
        return self._merger

    def budget_steps(self) -> list:
        return [lambda *a: resolve_key_conflicts(self, *a), lambda *a: merge_near_duplicates(self, *a)]

    def begin_run(self) -> None:
        self._conflict_budget = self.max_conflicts

    # -- conflicts -------------------------------------------------------------------------------
    def resolve_conflict(self, new: MemoryItem, old: MemoryItem, store: Store, sim: float) -> bool:
        if self._conflict_budget <= 0 or not self._resolver.available:
            return super().resolve_conflict(new, old, store, sim)
        self._conflict_budget -= 1
        pred = self._resolver(check=lambda p: p.decision in DECISIONS,
                              existing_memory=describe(old), new_memory=describe(new))
        if pred is None:
            return super().resolve_conflict(new, old, store, sim)
        reason = f"LM conflict resolution ({pred.decision}): {pred.reason}"
        if pred.decision == "keep_new":
            self.supersede(old, new, store, reason)
            return True
        if pred.decision == "keep_old":
            self.supersede(new, old, store, reason)
            return False
        return super().resolve_conflict(new, old, store, sim)

    # -- after each task -------------------------------------------------------------------------
    def after_episode(self, episode: Episode, store: Store) -> None:
        if episode.outcome == "success":
            promote_workflows(self, episode.id, store, episode.namespace, min_steps=self.workflow_min_steps,
                              min_coverage=self.workflow_coverage)
        super().after_episode(episode, store)

    # -- periodic --------------------------------------------------------------------------------
    def periodic(self, store: Store, namespace: str) -> None:
        self.reflect(store, namespace)
        self.merge_clusters(store, namespace)
        super().periodic(store, namespace)

    def merge_clusters(self, store: Store, namespace: str) -> int:
        items = store.list(namespace)
        if len(items) < 2:
            return 0
        now = self.tick(store, namespace)
        vecs = store.vectors(items)
        threshold = float(self.setting("merge_threshold", store, namespace))
        groups = clusters(items, vecs, threshold, cross_type=self.cross_type, texts=store.resources.texts)
        for g in groups:
            merge_cluster(self, [items[i] for i in g], store, lambda it: self.utility(it, now))
        return len(groups)

    def reflect(self, store: Store, namespace: str) -> int:
        """Reflection correction (LM); returns how many memories the LM judged."""
        return reflect(self, self._corrector, store, namespace, min_failures=self.reflect_failures,
                       limit=self.max_reflections)

"""`lightweight` manager: the common floor plus time decay (0.95 per episode) and a score-based
prune; never calls an LM."""
from __future__ import annotations

from memarch.modules.managers._floor import FloorManager, floor_knobs
from memarch.pipeline.registry import register


@register("manager", "lightweight", rank=1, needs_embeddings=True,
          description="floor + time decay 0.95 and score-based prune; no LM",
          knobs=floor_knobs(dedup=0.95, decay=0.95))
class LightweightManager(FloorManager):
    """Cheap curation: an item's utility is its feedback strength decayed by 0.95 for every
    episode since it was last retrieved (or written); the periodic audit tombstones items whose
    utility falls under ``min_utility`` and, over ``max_items``, the lowest-utility ones.

    Example::

        manager = LightweightManager(resources, max_items=300)
        kept = manager.on_insert(items, store)
        store.add(kept)
        manager.after_episode(episode, store)    # advances the clock that decay counts in
        manager.periodic(store, "default")       # "pruned: low utility" tombstones

    Config: the floor's keys (see `FloorManager`); ``decay`` defaults to 0.95.

    Memory budget (``memory_budget``): no rewrite; over budget it prunes the lowest utility
    first (decayed strength, so the longest unused), ties oldest first.
    """

    decay = 0.95

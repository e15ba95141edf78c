"""`json` store: exact key-value records in one JSON file; no LM, no vector index."""
from __future__ import annotations

from typing import ClassVar

from memarch.modules.stores.base import Store
from memarch.pipeline.registry import register


@register("store", "json", rank=1, description="exact key-value records in one JSON file (no LM, no index)")
class JsonStore(Store):
    """Records keyed by id (and by ``key`` for upserts); dense search is brute force over the
    embedding cache, so retrievers that need vectors still work on it."""

    _digest_covers_state: ClassVar[bool] = True  # records only: `Store`'s digest parts cover it

    def by_key(self, key: str, namespace: str = "default") -> list:
        return [it for it in self.list(namespace) if it.key == key]

"""The `Encoder` contract: an episode in, memory items out, with provenance.

Every encoder has an LM path (a typed DSPy Signature, used when an LM is configured) and an
LM-free path (a real algorithm on the structured episode). Outputs are cached on disk by
(encoder, config, instructions, episode content, LM identity)."""
from __future__ import annotations

import logging
from typing import Any, ClassVar

import dspy

from memarch.pipeline.module_attributes import lean_getattribute
from memarch.pipeline.cache import stable_hash
from memarch.pipeline.episodes import Episode
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.resources import Resources

log = logging.getLogger(__name__)


class Encoder(dspy.Module):
    """Subclasses implement :meth:`encode_free` and, when they have an LM path, :meth:`encode_lm`."""

    # dspy's check of direct `forward` calls for `forward` only (pipeline/module_attributes.py)
    __getattribute__ = lean_getattribute

    name: ClassVar[str] = "base"

    def __init__(self, resources: Resources | None = None, **config: Any):
        super().__init__()
        self.resources = resources or Resources()
        self.config = dict(config)
        self.fallbacks = 0  # LM answers that did not parse and fell back to the LM-free path
        self.lm_requests = 0  # episodes sent down the LM path

    # -- to implement ----------------------------------------------------------------------------
    def encode_free(self, episode: Episode) -> list[MemoryItem]:
        raise NotImplementedError

    def encode_lm(self, episode: Episode) -> list[MemoryItem]:
        """LM path; raise ValueError on an answer that does not parse. Default: LM-free path."""
        return self.encode_free(episode)

    def applies_to(self, episode: Episode) -> bool:
        """Outcome gates (e.g. insight only from failures); a gated episode yields no items."""
        return True

    # -- common behaviour ------------------------------------------------------------------------
    def instructions(self) -> dict[str, str]:
        return {n: p.signature.instructions for n, p in self.named_predictors()}

    def cache_key(self, episode: Episode) -> str:
        return stable_hash("encoder", self.name, self.config, self.instructions(),
                           episode.content_hash(), self.resources.lm_id)

    def encode(self, episode: Episode) -> list[MemoryItem]:
        if not self.applies_to(episode):
            return []
        cache = self.resources.encoder_cache
        key = self.cache_key(episode) if cache is not None else None
        if cache is not None:
            # The items of a hit, decoded once per process (`Resources.encoded`), then cloned per write:
            # every trial of a search writes the same episodes through the same encoders.
            memo = self.resources.encoded
            templates = memo.get(key)
            if templates is None:
                hit = cache.get_json(key)
                if hit is not None:
                    templates = memo.put(key, [MemoryItem.from_dict(d) for d in hit])
            if templates is not None:
                return [self._stamp(it.clone(), episode) for it in templates]
        fell_back = False
        if self.resources.lm is not None:
            if type(self).encode_lm is not Encoder.encode_lm:  # an encoder with an LM path
                self.lm_requests += 1
            try:
                items = self.encode_lm(episode)
            except ValueError as exc:  # one corrective retry lives inside encode_lm
                self.fallbacks += 1
                fell_back = True
                log.warning("encoder %s: LM output unusable for episode %s (%s); using the LM-free path",
                            self.name, episode.id, exc)
                items = self.encode_free(episode)
        else:
            items = self.encode_free(episode)
        items = [self._stamp(it, episode) for it in items]
        # A fallback is not cached under the LM's key: a later trial would replay it uncounted.
        if cache is not None and not fell_back:
            cache.set_json(key, [it.to_dict() for it in items])
        return items

    def _stamp(self, item: MemoryItem, episode: Episode) -> MemoryItem:
        """Provenance common to every encoder; the namespace follows the episode (not the cache)."""
        item.kind = self.name
        item.namespace = episode.namespace
        item.episode_id = item.episode_id or episode.id
        if item.outcome == "unknown" and episode.outcome != "unknown":
            item.outcome = episode.outcome
        item.event_time = item.event_time or episode.time
        if not any(e.action == "created" for e in item.lineage):
            item.log("created", f"encoder:{self.name}", at=item.event_time)
        return item

    def forward(self, episode: Episode) -> list[MemoryItem]:
        return self.encode(episode)

"""What the five experience encoders share: rendering a trajectory for the LM, the typed LM call
with one corrective retry, item construction with provenance, and the split between cached
per-episode candidates and cross-episode mining."""
from __future__ import annotations

import logging
from typing import Any, Callable, TypeVar

import dspy
from dspy.utils.exceptions import AdapterParseError

from memarch.modules.encoders._experience_mining import CANDIDATE, ExperienceMiner
from memarch.modules.encoders.base import Encoder
from memarch.pipeline.episodes import Episode
from memarch.pipeline.items import MemoryItem, make_item_id
from memarch.pipeline.resources import Resources

log = logging.getLogger(__name__)
T = TypeVar("T")


def render_trajectory(episode: Episode, *, observation_chars: int = 300) -> str:
    """``[s1] > go to fridge`` then the (truncated) observation, one step after another."""
    lines = []
    for s in episode.steps:
        obs = (s.observation or "").strip().replace("\n", " ")
        if len(obs) > observation_chars:
            obs = obs[:observation_chars] + "..."
        lines.append(f"[{s.id}] > {s.action}\n    {obs}")
    return "\n".join(lines)


class ExperienceEncoder(Encoder):
    """Base of the experience encoders (family ``experience``).

    Subclasses implement ``encode_free`` / ``encode_lm`` as pure functions of the episode (their
    output is cached per episode). Items whose ``fields["stage"]`` is ``"candidate"`` are not
    memory: :meth:`encode` records them in ``self.miner`` (per namespace) and calls :meth:`mine`,
    which returns the cross-episode items (never cached: they depend on history).

    Example::

        class StepCount(ExperienceEncoder):
            def encode_free(self, episode):
                return [self.make_item(episode, f"{len(episode.steps)} steps", {}, [])]
    """

    def __init__(self, resources: Resources | None = None, **config: Any):
        super().__init__(resources, **config)
        self.miner = ExperienceMiner()

    # -- items -------------------------------------------------------------------------------------
    def make_item(self, episode: Episode, text: str, fields: dict[str, Any], source_ids: list[str], *,
                  key: str | None = None, outcome: str | None = None) -> MemoryItem:
        """An item with the source task in ``fields["task"]`` and a deterministic id.

        Mined items carry a stable ``key`` (their abstract shape) and an id of (episode, text):
        a later episode that adds support writes a new version, which the manager merges into or
        upserts over the older one by key (with lineage) rather than dropping it as a rewrite.
        """
        fields = {**fields, "task": episode.task}
        return MemoryItem(text=text, kind=self.name, id=make_item_id(self.name, episode.id, text),
                          fields=fields, episode_id=episode.id, source_ids=list(source_ids),
                          outcome=outcome or episode.outcome, key=key)

    def candidate(self, episode: Episode, key: str, fields: dict[str, Any], source_ids: list[str]) -> MemoryItem:
        return self.make_item(episode, key, {**fields, "stage": CANDIDATE}, source_ids, key=key)

    # -- LM ----------------------------------------------------------------------------------------
    def predict(self, predictor: dspy.Predict, validate: Callable[[dspy.Prediction], T], **inputs: Any) -> T:
        """Call ``predictor`` under the resources' LM context; an answer that does not parse or
        fails ``validate`` (which raises ValueError) gets one corrective retry with the error as
        feedback, then ValueError (the base class falls back to the LM-free path)."""
        feedback = ""
        for attempt in (1, 2):
            try:
                with self.resources.lm_context():
                    pred = predictor(**inputs, feedback=feedback)
                return validate(pred)
            except (AdapterParseError, ValueError) as exc:
                reason = (str(getattr(exc, "message", "") or exc).strip().splitlines() or ["unparseable"])[0][:300]
                log.info("encoder %s: LM answer rejected (attempt %d): %s", self.name, attempt, reason)
                feedback = (f"Your previous answer was rejected: {reason}. Answer again with a JSON object "
                            f"whose fields match the output schema exactly.")
        raise ValueError(f"LM answer unusable after one corrective retry: {reason}")

    def trajectory_text(self, episode: Episode) -> str:
        return render_trajectory(episode, observation_chars=int(self.config.get("observation_chars", 300)))

    # -- candidates and mining ---------------------------------------------------------------------
    def mine(self, new: list[MemoryItem], episode: Episode) -> list[MemoryItem]:
        """Cross-episode items, given this episode's candidates ``new`` (``self.miner`` holds
        every candidate of the namespace so far)."""
        return []

    def encode(self, episode: Episode) -> list[MemoryItem]:
        items = super().encode(episode)
        final = [it for it in items if it.fields.get("stage") != CANDIDATE]
        new = [it for it in items if it.fields.get("stage") == CANDIDATE]
        if new:
            self.miner.observe(new, episode.namespace)
            final.extend(self._stamp(it, episode) for it in self.mine(new, episode))
        return final

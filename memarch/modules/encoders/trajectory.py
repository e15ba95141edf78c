"""`trajectory` encoder: a compressed action -> observation chain with the key decision and a
reusable anchor (the task with its entities abstracted), from any episode."""
from __future__ import annotations

import dspy

from memarch.modules.encoders._experience_actions import (
    abstract_actions, abstract_text, content_words, parse_episode,
)
from memarch.modules.encoders._experience_algorithms import compress_trajectory
from memarch.modules.encoders._experience_encoder import ExperienceEncoder
from memarch.modules.signatures.experience import CompressTrajectory
from memarch.pipeline.episodes import Episode
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.registry import register


def _short(text: str, n: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= n else text[:n] + "..."


@register("encoder", "trajectory", families="experience", uses_lm=True, rank=3,
          description="compressed action -> observation chain with the key decision and an anchor")
class TrajectoryEncoder(ExperienceEncoder):
    """Compress a trajectory to the steps that matter.

    LM-free: drop no-op steps (rejected by the environment) and repeated steps, keep the key
    decision (see ``_experience_algorithms.key_decision``); the anchor is the task with its
    entities replaced by placeholders, so similar tasks match.

    Example::

        enc = TrajectoryEncoder(Resources(embedder=Embedder("hash")))
        [item] = enc.encode(episode)
        item.fields["key_decision"], item.fields["anchor"]   # "open fridge", "put <OBJECT> in <LOCATION>"

    Config:
        max_steps: at most this many kept steps in the item (default 12; the key decision stays).
        observation_chars: observation length kept per step (default 160).
    """

    def __init__(self, resources=None, **config):
        super().__init__(resources, **config)
        self.compress = dspy.Predict(CompressTrajectory)

    def _text(self, episode: Episode, steps: list[str], key: str, anchor: str) -> str:
        return (f"Task: {episode.task}\nOutcome: {episode.outcome}\nSteps: " + "; ".join(steps)
                + f"\nKey decision: {key}\nAnchor: {anchor}")

    def encode_free(self, episode: Episode) -> list[MemoryItem]:
        if not episode.steps:
            return []
        comp = compress_trajectory(episode)
        kept = comp.kept
        cap = int(self.config.get("max_steps", 12))
        if len(kept) > cap:  # keep the tail (closest to the outcome) and the key decision
            tail = kept[-cap:]
            kept = sorted(set(tail[1:] if comp.key_decision not in tail else tail) | {comp.key_decision})
        n = int(self.config.get("observation_chars", 160))
        steps = [f"{episode.steps[i].action} -> {_short(episode.steps[i].observation, n)}" for i in kept]
        parsed = parse_episode(episode)
        _, binding = abstract_actions(parsed)
        anchor = abstract_text(episode.task, binding)
        key = episode.steps[comp.key_decision].action if comp.key_decision is not None else ""
        fields = {"steps": steps, "key_decision": key, "anchor": anchor,
                  "dropped": {episode.steps[i].id: why for i, why in comp.dropped.items()}}
        return [self.make_item(episode, self._text(episode, steps, key, anchor), fields,
                               [episode.steps[i].id for i in kept])]

    def encode_lm(self, episode: Episode) -> list[MemoryItem]:
        if not episode.steps:
            return []
        ids = {s.id for s in episode.steps}

        actions = [content_words(s.action) for s in episode.steps]

        def grounded(text: str) -> bool:  # names an action of this episode (not just a step id)
            words = content_words(text.split("->")[0])
            return bool(words) and any(len(words & a) * 2 >= len(a) for a in actions if a)

        def validate(pred: dspy.Prediction):
            c = pred.compressed
            if not c.steps or not c.key_decision.strip():
                raise ValueError("steps and key_decision must be non-empty")
            if not grounded(c.key_decision) or not any(grounded(s) for s in c.steps):
                raise ValueError("key_decision and steps must quote the episode's actions, not step ids")
            return c

        c = self.predict(self.compress, validate, task=episode.task, outcome=episode.outcome,
                         trajectory=self.trajectory_text(episode))
        source = [i for i in c.kept_step_ids if i in ids] or [s.id for s in episode.steps]
        fields = {"steps": list(c.steps), "key_decision": c.key_decision, "anchor": c.anchor}
        return [self.make_item(episode, self._text(episode, c.steps, c.key_decision, c.anchor), fields, source)]

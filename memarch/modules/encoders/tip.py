"""`tip` encoder: transferable heuristics (topic, principle, micro-example, counterfactual,
use_when / avoid_when). LM-free: preconditions learnt inside an episode, and action statistics
contrasted between successful and failed episodes."""
from __future__ import annotations

import dspy

from memarch.modules.encoders._experience_algorithms import precondition_tips
from memarch.modules.encoders._experience_encoder import ExperienceEncoder
from memarch.modules.encoders._experience_mining import action_profile, contrast_tips
from memarch.modules.signatures.experience import ExtractTips
from memarch.pipeline.episodes import Episode
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.registry import register

TIP_FIELDS = ("topic", "principle", "micro_example", "counterfactual", "use_when", "avoid_when")


def tip_text(f: dict) -> str:
    return (f"Tip ({f['topic']}): {f['principle']}\nExample: {f['micro_example']}\n"
            f"Otherwise: {f['counterfactual']}\nUse when: {f['use_when']}; avoid when: {f['avoid_when']}")


def _short(text: str, n: int = 120) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= n else text[:n] + "..."


@register("encoder", "tip", families="experience", uses_lm=True, rank=1,
          description="transferable heuristic: topic, principle, micro-example, counterfactual, use/avoid when")
class TipEncoder(ExperienceEncoder):
    """Heuristics that transfer across tasks.

    Per episode (cached): a precondition tip whenever a rejected action later worked after some
    other action (``take apple`` rejected, ``open fridge``, ``take apple`` works), plus the
    episode's action profile as a candidate. Across episodes (:meth:`mine`): action shapes whose
    presence separates successes from failures (smoothed rate difference >= ``margin``) become
    "do" / "avoid" tips; each is one item per shape, re-written as evidence accumulates.

    Example::

        enc = TipEncoder(resources)
        for ep in episodes:
            tips = enc.encode(ep)
        tips[0].fields["principle"]

    Config:
        min_support: episodes an action shape must appear in for a contrast tip (default 2).
        margin: minimum success-rate difference for a contrast tip (default 0.5).
    """

    def __init__(self, resources=None, **config):
        super().__init__(resources, **config)
        self.extract = dspy.Predict(ExtractTips)

    def _profile(self, episode: Episode) -> list[MemoryItem]:
        if episode.outcome not in ("success", "failure") or not episode.steps:
            return []
        prof = action_profile(episode)
        return [self.candidate(episode, f"profile:{episode.id}", prof, list(prof["step_ids"].values()))]

    def encode_free(self, episode: Episode) -> list[MemoryItem]:
        out = []
        for pt in precondition_tips(episode):
            f = {"topic": pt.action.split()[0], "principle": f"Before `{pt.action}`, do `{pt.enabler}`.",
                 "micro_example": f"`{pt.failed.action}` was rejected ({_short(pt.failed.observation)}); "
                                  f"after `{pt.enabling.action}` it worked.",
                 "counterfactual": f"Without `{pt.enabler}`, `{pt.action}` fails: {_short(pt.failed.observation)}",
                 "use_when": f"about to `{pt.action}`", "avoid_when": f"`{pt.enabler}` is already done",
                 "source": "precondition"}
            out.append(self.make_item(episode, tip_text(f), f,
                                      [pt.failed.id, pt.enabling.id, pt.succeeded.id]))
        return out + self._profile(episode)

    def encode_lm(self, episode: Episode) -> list[MemoryItem]:
        def validate(pred: dspy.Prediction):
            tips = [t for t in pred.tips if t.principle.strip()]
            if not tips:
                raise ValueError("no tip with a non-empty principle")
            return tips

        tips = self.predict(self.extract, validate, task=episode.task, outcome=episode.outcome,
                            trajectory=self.trajectory_text(episode))
        out = []
        for t in tips[: int(self.config.get("max_tips", 3))]:
            f = {**t.model_dump(), "source": "lm"}
            out.append(self.make_item(episode, tip_text(f), f, [s.id for s in episode.steps]))
        return out + self._profile(episode)

    def mine(self, new: list[MemoryItem], episode: Episode) -> list[MemoryItem]:
        pool = self.miner.seen(episode.namespace)  # one action profile per episode
        out = []
        for focus in new:
            for c in contrast_tips(pool, min_support=int(self.config.get("min_support", 2)),
                                   margin=float(self.config.get("margin", 0.5)), focus=focus):
                s, f = c["with"]["success"], c["with"]["failure"]
                S, F = c["totals"]["success"], c["totals"]["failure"]
                do = c["polarity"] == "do"
                fields = {
                    "topic": c["shape"].split()[0] if c["shape"].split() else c["shape"],
                    "principle": (f"Do `{c['shape']}`" if do else f"Avoid `{c['shape']}`")
                                 + f": seen in {s}/{S} successful and {f}/{F} failed episodes.",
                    "micro_example": f"`{c['example']}`",
                    "counterfactual": (f"episodes without it: {S - s} succeeded, {F - f} failed" if do else
                                       f"episodes that avoided it: {S - s} succeeded, {F - f} failed"),
                    "use_when": f"a step like `{c['shape']}` applies to the task" if do
                                else f"tempted to `{c['shape']}`",
                    "avoid_when": "it is already done" if do else "the task explicitly requires it",
                    "source": "contrast", "effect": c["effect"], "support": s + f,
                }
                ids = [focus.fields["step_ids"][c["shape"]]] if c["shape"] in focus.fields["step_ids"] else []
                out.append(self.make_item(episode, tip_text(fields), fields, ids, key=c["key"],
                                          outcome="success" if do else "failure"))
        return out

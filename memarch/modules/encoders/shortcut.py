"""`shortcut` encoder: parameterised macros with input/output schema and a test invocation
(Voyager-style skills). LM-free, they are mined from action subsequences that recur across
successful episodes; with an LM, each successful episode also yields one macro directly."""
from __future__ import annotations

import re

import dspy

from memarch.modules.encoders._experience_actions import instantiate
from memarch.modules.encoders._experience_encoder import ExperienceEncoder
from memarch.modules.encoders._experience_mining import mine_shortcuts, shortcut_candidates
from memarch.modules.signatures.experience import WriteShortcut
from memarch.pipeline.episodes import Episode
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.registry import register

PLACEHOLDER = re.compile(r"<([A-Z][A-Z0-9_]*)>")
JSON_TYPES = ("string", "integer", "number", "boolean", "array", "object")


def shortcut_text(name: str, parameters: list[str], steps: list[str]) -> str:
    return f"Shortcut {name}({', '.join(parameters)}): " + " ; ".join(steps)


def json_schema(described: dict[str, str], names: list[str]) -> dict:
    """``{name: "type: meaning"}`` from the LM as the JSON schema the mined macros use."""
    props = {}
    for n in names:
        desc = str(described.get(n, ""))
        head = desc.split(":")[0].strip().lower()
        props[n] = {"type": head if head in JSON_TYPES else "string", "description": desc}
    return {"type": "object", "required": list(names), "properties": props}


@register("encoder", "shortcut", families="experience", uses_lm=True, rank=5,
          description="parameterised macro with input/output schema and a test invocation")
class ShortcutEncoder(ExperienceEncoder):
    """Reusable macros from successful episodes.

    Per episode (cached): every contiguous window of the compressed action sequence becomes a
    candidate keyed by its abstract form (``go to <LOCATION> ; open <LOCATION> ; take <OBJECT>
    from <LOCATION>``). Across episodes (:meth:`mine`): a window found in ``min_support``
    distinct successful episodes of the namespace becomes a macro; slots that differ between
    occurrences are its parameters, constant ones are inlined. Failed episodes yield nothing;
    episodes of unknown outcome give LM macros but never count as support.

    Example::

        enc = ShortcutEncoder(resources)
        enc.encode(take_apple_episode)         # [] (support 1)
        [macro] = enc.encode(take_milk_episode)
        macro.fields["parameters"], macro.fields["test_invocation"]

    Config:
        min_support: successful episodes a window must recur in (default 2).
        min_len / max_len: window lengths in steps (default 3 / 6).
    """

    def __init__(self, resources=None, **config):
        super().__init__(resources, **config)
        self.write_macro = dspy.Predict(WriteShortcut)

    def applies_to(self, episode: Episode) -> bool:
        return episode.outcome != "failure"

    def _candidates(self, episode: Episode) -> list[MemoryItem]:
        cands = shortcut_candidates(episode, min_len=int(self.config.get("min_len", 3)),
                                    max_len=int(self.config.get("max_len", 6)))
        return [self.candidate(episode, c["key"], {k: v for k, v in c.items() if k not in ("key", "source_ids")},
                               c["source_ids"]) for c in cands]

    def encode_free(self, episode: Episode) -> list[MemoryItem]:
        return self._candidates(episode)

    def encode_lm(self, episode: Episode) -> list[MemoryItem]:
        if not episode.steps:
            return []

        def validate(pred: dspy.Prediction):
            sc = pred.shortcut
            if not sc.steps:
                raise ValueError("a shortcut needs steps")
            used = {m for s in sc.steps for m in PLACEHOLDER.findall(s)}
            missing = [p for p in sc.parameters if p not in used]
            if missing:
                raise ValueError(f"parameters {missing} do not appear as <PARAM> slots in steps")
            unbound = used - set(sc.test_invocation)
            if unbound:
                raise ValueError(f"test_invocation gives no value for {sorted(unbound)}")
            return sc

        sc = self.predict(self.write_macro, validate, task=episode.task, trajectory=self.trajectory_text(episode))
        args = {p: sc.test_invocation[p] for p in sc.parameters}
        fields = {"name": sc.name, "parameters": list(sc.parameters),
                  "input_schema": json_schema(sc.input_schema, sc.parameters),
                  "output_schema": json_schema(sc.output_schema, list(sc.output_schema)), "steps": list(sc.steps),
                  "test_invocation": {"arguments": args, "expected_actions": instantiate(sc.steps, args)},
                  "support": 1, "episodes": [episode.id]}
        macro = self.make_item(episode, shortcut_text(sc.name, sc.parameters, sc.steps), fields,
                               [s.id for s in episode.steps])
        return [macro] + self._candidates(episode)

    def mine(self, new: list[MemoryItem], episode: Episode) -> list[MemoryItem]:
        # Only windows this episode touched can change; a longer window that contains one of
        # them with the same support was touched too, so maximality is decided among these.
        touched = {c.key for c in new if c.key}
        pool = self.miner.with_keys(episode.namespace, touched)
        out = []
        for m in mine_shortcuts(pool, min_support=int(self.config.get("min_support", 2))):
            fields = {k: v for k, v in m.items() if k != "key"}
            # provenance: this episode's steps; the other episodes' steps are in "occurrences"
            out.append(self.make_item(episode, shortcut_text(m["name"], m["parameters"], m["steps"]), fields,
                                      m["occurrences"].get(episode.id, []), key=f"shortcut:{m['key']}",
                                      outcome="success"))
        return out

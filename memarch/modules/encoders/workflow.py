"""`workflow` encoder (successful episodes only): the ordered action chain with entity names
abstracted into ``<PLACEHOLDER>`` slots, AWM-style."""
from __future__ import annotations

import re

import dspy

from memarch.modules.encoders._experience_algorithms import induce_workflow
from memarch.modules.encoders._experience_encoder import ExperienceEncoder
from memarch.modules.signatures.experience import InduceWorkflow
from memarch.pipeline.episodes import Episode
from memarch.pipeline.items import MemoryItem
from memarch.pipeline.registry import register

PLACEHOLDER = re.compile(r"<([A-Z][A-Z0-9_]*)>")


def workflow_text(task_template: str, steps: list[str]) -> str:
    return f"Workflow for: {task_template}\n" + "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1))


@register("encoder", "workflow", families="experience", uses_lm=True, rank=4,
          description="ordered action chain with <PLACEHOLDER> slots (successful episodes only)")
class WorkflowEncoder(ExperienceEncoder):
    """Induce a reusable procedure from a successful episode.

    LM-free: compress the trajectory, then abstract what varies between tasks — object names
    after verbs, places after prepositions, quoted strings, numbers, capitalised names, tool
    arguments — into typed placeholders, consistently across the steps and the task text.

    Example::

        [item] = WorkflowEncoder(resources).encode(episode)   # task "put an apple in the fridge"
        item.fields["task_template"]   # "put <OBJECT> in <LOCATION>"
        item.fields["steps"]           # ["go to <LOCATION>", "open <LOCATION>", ...]
    """

    def __init__(self, resources=None, **config):
        super().__init__(resources, **config)
        self.induce = dspy.Predict(InduceWorkflow)

    def applies_to(self, episode: Episode) -> bool:
        return episode.outcome == "success"

    def encode_free(self, episode: Episode) -> list[MemoryItem]:
        wf = induce_workflow(episode)
        if wf is None:
            return []
        fields = {"task_template": wf.task_template, "steps": wf.steps,
                  "placeholders": sorted(wf.binding), "example_binding": wf.binding}
        return [self.make_item(episode, workflow_text(wf.task_template, wf.steps), fields, wf.source_ids)]

    def encode_lm(self, episode: Episode) -> list[MemoryItem]:
        if not episode.steps:
            return []

        def validate(pred: dspy.Prediction):
            wf = pred.workflow
            if not wf.steps:
                raise ValueError("a workflow needs at least one step")
            if not any(PLACEHOLDER.search(s) for s in wf.steps):
                raise ValueError("no step has a <PLACEHOLDER> slot; abstract the task-specific entities")
            return wf

        wf = self.predict(self.induce, validate, task=episode.task, trajectory=self.trajectory_text(episode))
        names = sorted({m for s in wf.steps for m in PLACEHOLDER.findall(s)})
        fields = {"task_template": wf.task_template, "steps": list(wf.steps), "placeholders": names,
                  "example_binding": {}}
        return [self.make_item(episode, workflow_text(wf.task_template, wf.steps), fields,
                               [s.id for s in episode.steps])]

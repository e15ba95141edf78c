"""Signatures of the acting agents (the DSPy agent that plays TextWorldExpress games)."""
from __future__ import annotations

import dspy


class ChooseAction(dspy.Signature):
    """You play a text game to complete the task. Use the memory of earlier games (workflows,
    trajectories, shortcuts) when it applies. Reply with exactly one of the admissible actions."""

    task: str = dspy.InputField()
    memory: str = dspy.InputField(desc="relevant memory retrieved for this task")
    observation: str = dspy.InputField()
    history: list[str] = dspy.InputField(desc="actions taken so far, oldest first")
    admissible_actions: list[str] = dspy.InputField()
    reasoning: str = dspy.OutputField(desc="one short sentence")
    action: str = dspy.OutputField(desc="exactly one string from admissible_actions")


class ChooseActionWithNotes(dspy.Signature):
    """You play a text game to complete the task. You keep notes in a file-system memory through
    tools (read, search, upsert or append, delete): check your notes before writing, write what
    you will need later (rooms, exits, moves made), then reply with exactly one admissible action."""

    task: str = dspy.InputField()
    memory: str = dspy.InputField(desc="relevant memory retrieved for this task")
    observation: str = dspy.InputField()
    history: list[str] = dspy.InputField(desc="actions taken so far, oldest first")
    admissible_actions: list[str] = dspy.InputField()
    action: str = dspy.OutputField(desc="exactly one string from admissible_actions")

"""Typed DSPy Signatures of the experience encoders (tip, insight, trajectory, workflow, shortcut):
one LM extraction call per episode, with pydantic output models the JSON adapter validates."""
from __future__ import annotations

from typing import Literal

import dspy
import pydantic

FailurePattern = Literal["wrong_entity", "wrong_value", "format_error", "incomplete_search",
                         "precondition_violation", "tool_error", "wrong_action"]


class Tip(pydantic.BaseModel):
    """A transferable heuristic."""

    topic: str
    principle: str
    micro_example: str
    counterfactual: str
    use_when: str
    avoid_when: str


class Insight(pydantic.BaseModel):
    """Why a task failed and how to avoid it next time."""

    failure_pattern: FailurePattern
    root_cause: str
    corrective_strategy: str
    detection_signal: str
    failing_step_id: str = pydantic.Field(description="id of the step where the failure showed, e.g. 's4'")


class CompressedTrajectory(pydantic.BaseModel):
    steps: list[str] = pydantic.Field(description="kept steps as 'action -> observation', in order")
    kept_step_ids: list[str] = pydantic.Field(description="ids of the kept steps, e.g. ['s1', 's3']")
    key_decision: str = pydantic.Field(description="the action that decided the outcome")
    anchor: str = pydantic.Field(description="a short reusable cue for recognising similar tasks")


class Workflow(pydantic.BaseModel):
    task_template: str = pydantic.Field(description="the task with entities replaced by <PLACEHOLDER>s")
    steps: list[str] = pydantic.Field(description="ordered actions with <PLACEHOLDER> slots")


class Shortcut(pydantic.BaseModel):
    name: str = pydantic.Field(description="snake_case macro name")
    parameters: list[str] = pydantic.Field(description="placeholder names used in steps, e.g. ['OBJECT']")
    input_schema: dict[str, str] = pydantic.Field(description="parameter -> type and meaning")
    output_schema: dict[str, str] = pydantic.Field(description="output field -> type and meaning")
    steps: list[str] = pydantic.Field(description="actions with <PARAMETER> slots")
    test_invocation: dict[str, str] = pydantic.Field(description="parameter -> value replaying this episode")


class ExtractTips(dspy.Signature):
    """From an agent's trajectory, write transferable tips: heuristics that would help on other
    tasks, each with a concrete micro-example from this trajectory and the counterfactual."""

    task: str = dspy.InputField()
    outcome: str = dspy.InputField(desc="success or failure")
    trajectory: str = dspy.InputField(desc="steps as '[id] > action' then the observation")
    feedback: str = dspy.InputField(desc="empty on the first attempt; else why the last answer was rejected")
    tips: list[Tip] = dspy.OutputField(desc="1 to 3 tips")


class DiagnoseFailure(dspy.Signature):
    """Diagnose a failed agent trajectory: label the failure pattern, find the root cause (the
    failing step and the last divergent action), and say how to detect and avoid it."""

    task: str = dspy.InputField()
    trajectory: str = dspy.InputField(desc="steps as '[id] > action' then the observation")
    feedback: str = dspy.InputField(desc="empty on the first attempt; else why the last answer was rejected")
    insight: Insight = dspy.OutputField()


class CompressTrajectory(dspy.Signature):
    """Compress an agent trajectory: drop no-op and repeated steps, keep the action -> observation
    chain that matters, name the key decision and a reusable anchor."""

    task: str = dspy.InputField()
    outcome: str = dspy.InputField()
    trajectory: str = dspy.InputField(desc="steps as '[id] > action' then the observation")
    feedback: str = dspy.InputField(desc="empty on the first attempt; else why the last answer was rejected")
    compressed: CompressedTrajectory = dspy.OutputField()


class InduceWorkflow(dspy.Signature):
    """Induce a reusable workflow from a successful trajectory: the ordered actions with the
    task-specific entities (objects, places, names, numbers, quoted text) abstracted into
    <PLACEHOLDER> slots, e.g. 'take <OBJECT> from <LOCATION>'."""

    task: str = dspy.InputField()
    trajectory: str = dspy.InputField(desc="steps as '[id] > action' then the observation")
    feedback: str = dspy.InputField(desc="empty on the first attempt; else why the last answer was rejected")
    workflow: Workflow = dspy.OutputField()


class WriteShortcut(dspy.Signature):
    """Turn a successful trajectory into a parameterised macro (a reusable skill): its parameters,
    input and output schema, the steps with <PARAMETER> slots, and a test invocation that replays
    this trajectory."""

    task: str = dspy.InputField()
    trajectory: str = dspy.InputField(desc="steps as '[id] > action' then the observation")
    feedback: str = dspy.InputField(desc="empty on the first attempt; else why the last answer was rejected")
    shortcut: Shortcut = dspy.OutputField()

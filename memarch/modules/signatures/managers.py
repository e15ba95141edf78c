"""Typed Signatures for the judgement steps of the memory managers: resolving a conflict between
two memories, correcting a memory that misled failed tasks, and generalising a cluster."""
from __future__ import annotations

from typing import Literal

import dspy


class ResolveConflict(dspy.Signature):
    """Two memories of an agent are near-duplicates but came from tasks with opposite outcomes
    (one success, one failure), so at most one of them is good advice. Decide which to keep:
    `keep_new` supersedes the existing memory, `keep_old` rejects the new one, `keep_both` when
    they apply to different situations."""

    existing_memory: str = dspy.InputField(desc="the stored memory, with its outcome and time")
    new_memory: str = dspy.InputField(desc="the memory being written, with its outcome and time")
    feedback: str = dspy.InputField(desc="why your previous answer was rejected; empty on the first try")
    decision: Literal["keep_new", "keep_old", "keep_both"] = dspy.OutputField()
    reason: str = dspy.OutputField(desc="one sentence")


class CorrectMemory(dspy.Signature):
    """A memory was retrieved for tasks that then failed. Reflect on whether the memory misled
    them: `keep` it as is, `revise` it (give the corrected memory text) or `delete` it."""

    memory: str = dspy.InputField()
    failed_tasks: list[str] = dspy.InputField(desc="tasks that retrieved the memory and failed")
    feedback: str = dspy.InputField(desc="why your previous answer was rejected; empty on the first try")
    verdict: Literal["keep", "revise", "delete"] = dspy.OutputField()
    corrected_memory: str = dspy.OutputField(desc="the revised memory text; empty unless verdict is revise")
    reason: str = dspy.OutputField(desc="one sentence")


class GeneraliseMemories(dspy.Signature):
    """Several memories written by different tasks say related things. Write one general memory
    that keeps what holds across all of them and drops task-specific details."""

    memories: list[str] = dspy.InputField()
    feedback: str = dspy.InputField(desc="why your previous answer was rejected; empty on the first try")
    general_memory: str = dspy.OutputField(desc="one or two sentences, reusable across tasks")

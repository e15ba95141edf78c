"""Signatures of the guided search's LM calls: the diagnoser (failures -> textual gradient) and the
proposer (history, ledger, gradient, front -> K architectures as coordinate edits)."""
from __future__ import annotations

import dspy
from pydantic import BaseModel, Field

from memarch.optimizers.samplers.guided.gradient import TextualGradient


class ProposedArchitecture(BaseModel):
    encode: list[str] = Field(description="non-empty subset of the encoder menu")
    store: str
    retrieve: str
    manage: str
    edit: str = Field(default="", description="the coordinate edit applied to the champion, 'field: old -> new'")
    rationale: str = ""


class DiagnoseFailures(dspy.Signature):
    """You diagnose a memory architecture for an LLM agent. Failed queries are attributed to the
    module that lost the answer (encode: never written; store/manage: written but dropped or stale;
    retrieve: stored but not retrieved). Name the module to change next and one coordinate edit
    chosen from the allowed edits, citing failed query ids as evidence."""

    architecture: str = dspy.InputField(desc="encoders|store|retriever|manager")
    failure_histogram: dict[str, int] = dspy.InputField(desc="module -> attributed failures")
    example_failures: list[dict] = dspy.InputField()
    allowed_edits: list[str] = dspy.InputField(desc="untried valid edits, best supported first")
    gradient: TextualGradient = dspy.OutputField()


class ProposeArchitectures(dspy.Signature):
    """You search for the best long-term-memory architecture of an LLM agent. Propose exactly k new
    architectures from the menus, mostly coordinate edits of the champion that follow the textual
    gradient, at least one exploratory. Never repeat an evaluated architecture or a refuted edit;
    obey the validity rules."""

    menus: dict[str, list[str]] = dspy.InputField(desc="role -> allowed module names")
    rules: list[str] = dspy.InputField(desc="validity rules")
    champion: str = dspy.InputField()
    gradient: TextualGradient = dspy.InputField()
    history: str = dspy.InputField(desc="evaluated architectures with score and cost, best first")
    ledger: str = dspy.InputField(desc="edits tried with status active/pending/refuted")
    pareto_front: list[str] = dspy.InputField(desc="non-dominated (score, cost) architectures")
    k: int = dspy.InputField()
    proposals: list[ProposedArchitecture] = dspy.OutputField()

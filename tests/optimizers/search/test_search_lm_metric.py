"""With a task LM, the search's metric reads answers with the LM (QA F1 objective)."""
from __future__ import annotations

import argparse

import dspy
from dspy.utils import DummyLM

from memarch.cli.compile import build_evaluator
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.embed import Embedder
from memarch.pipeline.resources import Resources


def test_metric_uses_the_lm_reader_when_an_lm_is_configured(tmp_path):
    lm = DummyLM([{"answer": "I don't know"}] * 400, adapter=dspy.JSONAdapter())
    resources = Resources(embedder=Embedder("hash", cache_dir=tmp_path), lm=lm, cache_dir=tmp_path,
                          use_encoder_cache=False)
    args = argparse.Namespace(knob=["conversations=1", "sessions=3"], benchmark="generated", data=None,
                              limit=4, context_budget=200, judge_lm=None)
    metric = build_evaluator(args, resources)
    result = metric(Architecture(("turn",), "json", "hybrid", "lightweight"), "search")
    assert not result.failed, result.error
    assert result.metadata["metric"] == "qa_f1" and "qa_f1" in result.scores
    assert result.score == result.scores["qa_f1"]

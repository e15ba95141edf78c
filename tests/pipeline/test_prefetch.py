"""Embeddings ahead of need: the background process embeds what the run will, into the shared cache;
the vectors are the ones the run would compute (within float rounding of another batch), a study
that found them there gives the trial results of one that computed them, and a fast embedder or an
agent benchmark starts nothing."""
from __future__ import annotations

import numpy as np
import pytest

from memarch.benchmarks import get_benchmark
from memarch.benchmarks.evaluation.texts_ahead import texts_ahead
from memarch.pipeline.embed import Embedder
from memarch.pipeline.prefetch import Prefetch, embed_texts

TOLERANCE = 1e-5  # measured: 1.1e-7 (max abs difference over 300 LoCoMo texts, batch of 256 vs 64)


@pytest.fixture(scope="module")
def tiny():
    return get_benchmark("generated", conversations=1, sessions=2)


def test_the_texts_ahead_are_the_questions_and_what_the_encoders_write(tiny):
    from memarch.pipeline.architecture import Architecture
    from memarch.pipeline.program import MemoryProgram
    from memarch.pipeline.resources import Resources

    texts = set(texts_ahead(tiny, ["search"]))
    view = tiny.split("search")
    assert {q.text for d in view.dialogues for q in d.questions} <= texts
    program = MemoryProgram(Architecture(("turn", "event", "fact"), "json", "hybrid", "lightweight"),
                            resources=Resources(embedder=Embedder("hash", use_cache=False)))
    written = {it.text for d in view.dialogues for s in d.sessions for it in program.encode(s)}
    assert written and written <= texts  # every item a default LM-free program writes is known ahead


@pytest.mark.integration
def test_prefetched_vectors_are_the_ones_the_run_computes(tiny, tmp_path):
    texts = texts_ahead(tiny, ["search"])[:80]
    prefetch = Prefetch.start({"model": "all-MiniLM-L6-v2", "texts": texts}, cache_dir=tmp_path)
    assert prefetch is not None and prefetch.wait(timeout=600) == 0
    cached = Embedder(cache_dir=tmp_path)
    assert cached.embed(texts).shape == (len(texts), 384) and cached.computed == 0  # all found on disk
    fresh = Embedder(use_cache=False).embed(texts)
    assert float(np.abs(cached.embed(texts) - fresh).max()) <= TOLERANCE


@pytest.mark.integration
def test_a_study_with_prefetched_vectors_gives_the_same_trials(tiny, tmp_path):
    """Prefetch first (to the end, so the test does not race it), then compile; the same compile on
    a cache it did not prefetch: the same evaluated architectures, curve, pick and scores."""
    from memarch.optimizers.compile import MemarchOptimizer, SearchSettings
    from memarch.optimizers.evaluators import BenchmarkEvaluator
    from memarch.pipeline.resources import Resources

    def run(cache, prefetch: bool):
        evaluator = BenchmarkEvaluator(tiny, resources=Resources(embedder=Embedder(cache_dir=cache)))
        if prefetch:
            job = evaluator.prefetch(["search", "validation", "test"])
            assert job is not None and job.wait(timeout=900) == 0
        opt = MemarchOptimizer(evaluator, SearchSettings(strategy="random", budget=3, warm_start="none",
                                                         prefetch=False))
        opt.compile("conversation")
        d = opt.report.to_dict()
        d.pop("wall_s")
        for values in d["validation"]["validation_values"].values():  # wall-clock costs
            values.pop("read_p95"), values.pop("write_s")
        return d, evaluator.resources.embedder.computed

    (ahead, computed_ahead), (alone, computed_alone) = run(tmp_path / "a", True), run(tmp_path / "b", False)
    assert ahead == alone
    assert computed_ahead < computed_alone  # the run found most of its vectors on disk


def test_nothing_starts_for_a_fast_embedder_or_without_texts(tiny, hash_resources):
    from memarch.optimizers.evaluators import BenchmarkEvaluator

    assert Prefetch.start({"model": "hash", "texts": ["a"]}) is None
    assert Prefetch.start({"model": "all-MiniLM-L6-v2", "texts": []}) is None
    assert BenchmarkEvaluator(tiny, resources=hash_resources).prefetch(["search"]) is None
    assert embed_texts("hash", ["a", "b", "a"]) == 2


def test_the_prefetch_stops_once_the_run_that_started_it_is_gone(monkeypatch, tmp_path):
    """Its parent changed (the run ended, even by kill -9, and the process was re-parented): it embeds
    nothing more; while the run lives it embeds everything (tests/optimizers/compile/test_killed_compile.py
    kills a real compile)."""
    import os

    from memarch.pipeline.prefetch import PARENT

    monkeypatch.setenv("MEMARCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv(PARENT, str(os.getppid() + 1_000_000))  # not our parent: the run is gone
    assert embed_texts("hash", ["a", "b"]) == 0
    monkeypatch.setenv(PARENT, str(os.getppid()))
    assert embed_texts("hash", ["a", "b"]) == 2


@pytest.mark.integration
def test_sentences_ahead_only_where_the_questions_can_read_every_item():
    """A LongMemEval_S instance: one question, thousands of items: its items are embedded ahead, their
    sentences are not (a read ranks at most MAX_READ_ITEMS); the oracle instance's few items' are."""
    from pathlib import Path

    from memarch.benchmarks.evaluation.protocols import stream_schedule
    from memarch.benchmarks.evaluation.texts_ahead import MAX_READ_ITEMS
    from memarch.benchmarks.longmemeval import LongMemEval
    from memarch.modules.retrievers import split_sentences
    from memarch.pipeline.registry import REGISTRY
    from memarch.pipeline.resources import Resources

    data = Path(__file__).resolve().parents[3] / "shared" / "data" / "longmemeval"
    encoders = [spec.cls(Resources()) for spec in REGISTRY.specs("encoder", "conversation") if not spec.needs_lm]
    for variant, sentences_ahead in (("s", False), ("oracle", True)):
        bench = LongMemEval(data, variant=variant, instances=1,
                            fractions={"search": 1.0, "validation": 0.0, "test": 0.0})
        texts = set(texts_ahead(bench, ["search"]))
        items = {it.text for d in bench.dialogues for s, _ in stream_schedule(d) for e in encoders
                 if e.applies_to(s) for it in e.encode_free(s)}
        sentences = {x for t in items for x in split_sentences(t)} - items
        assert items <= texts and sentences
        assert (len(items) > MAX_READ_ITEMS) != sentences_ahead  # one question reads at most that many
        if sentences_ahead:
            assert sentences <= texts
        else:
            assert not sentences & texts - {q.text for d in bench.dialogues for q in d.questions}

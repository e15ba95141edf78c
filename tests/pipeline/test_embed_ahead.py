"""Embeddings ahead of a run, in the foreground on every core: what the cache lacks is embedded by
worker processes, the run then computes nothing, the vectors are the ones it would have computed,
a failed worker is counted (the run embeds what is left), and nothing starts for a fast embedder,
a program that embeds nothing or a pruned trial."""
from __future__ import annotations

import numpy as np
import pytest

from memarch.benchmarks import get_benchmark
from memarch.benchmarks.evaluation.evaluate import evaluate
from memarch.benchmarks.evaluation.texts_ahead import program_texts
from memarch.pipeline import embed_ahead as ahead_module
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.cache import DiskCache
from memarch.pipeline.embed import Embedder
from memarch.pipeline.embed_ahead import AheadProgress, embed_ahead
from memarch.pipeline.program import MemoryProgram
from memarch.pipeline.resources import Resources

TOLERANCE = 1e-5  # another batch's float rounding (tests/pipeline/test_prefetch.py)
ARCH = Architecture(("turn", "event"), "vector", "hybrid", "lightweight")


@pytest.fixture(scope="module")
def tiny():
    return get_benchmark("generated", conversations=1, sessions=2)


def test_present_names_the_keys_a_cache_holds_without_reading_them(tmp_path):
    cache = DiskCache(tmp_path / "c.sqlite", table="emb")
    cache.set_many({"a": b"1", "b": b"2"})
    assert cache.present(["a", "c", "b", "a"]) == {"a", "b"}
    assert cache.present([]) == set()


def test_a_fast_embedder_or_one_without_a_disk_cache_starts_nothing(tmp_path):
    texts = [f"text {i}" for i in range(600)]
    assert embed_ahead(Embedder("hash", cache_dir=tmp_path), texts).workers == 0
    report = embed_ahead(Embedder("all-MiniLM-L6-v2", use_cache=False), texts)
    assert report.workers == 0 and report.computed == 0 and report.requested == 600


def test_below_the_threshold_the_run_embeds_them_itself(tmp_path):
    report = embed_ahead(Embedder("all-MiniLM-L6-v2", cache_dir=tmp_path), ["a", "b", "a", ""], min_texts=3)
    assert (report.requested, report.workers, report.missing) == (2, 0, 2)


def test_program_texts_are_what_the_write_embeds(tiny):
    view = tiny.split("search")
    program = MemoryProgram(ARCH, resources=Resources(embedder=Embedder("hash", use_cache=False)))
    texts = set(program_texts(program, view))
    assert {q.text for d in view.dialogues for q in d.questions} <= texts
    program.write_many([s for d in view.dialogues for s in d.sessions])
    stored = {it.text for ns in program.store.namespaces() for it in program.store.list(ns)}
    assert stored and stored <= texts


@pytest.mark.integration
def test_the_workers_fill_the_cache_with_the_vectors_the_run_would_compute(tiny, tmp_path):
    texts = sorted({t.text for d in tiny.dialogues for s in d.sessions for t in s.turns})[:120]
    progress = []
    report = embed_ahead(Embedder("all-MiniLM-L6-v2", cache_dir=tmp_path), texts, workers=2, min_texts=1,
                         on_progress=progress.append)
    assert (report.workers, report.computed, report.missing, report.failed_workers) == (2, len(texts), 0, 0)
    warm = Embedder("all-MiniLM-L6-v2", cache_dir=tmp_path)
    got = warm.embed(texts)
    assert warm.computed == 0  # every vector came from the cache
    direct = Embedder("all-MiniLM-L6-v2", use_cache=False).embed(texts)
    assert np.abs(got - direct).max() < TOLERANCE
    assert all(0 <= p.share <= 1 and 0 <= p.done <= p.total == len(texts) and p.seconds > 0 for p in progress)


def test_progress_eta_is_the_pace_so_far():
    assert AheadProgress(done=10, total=40, share=0.25, seconds=30.0).eta_s == pytest.approx(90.0)
    assert AheadProgress(done=40, total=40, share=1.0, seconds=120.0).eta_s == 0.0
    assert AheadProgress(done=0, total=40, share=0.0, seconds=5.0).eta_s is None  # no pace yet


def test_the_cli_line_says_the_eta_once_a_minute(capsys, monkeypatch):
    from memarch.cli import evaluate as cli_evaluate

    now = [1000.0]
    monkeypatch.setattr("time.monotonic", lambda: now[0])
    report = cli_evaluate._embed_progress()
    for at, progress in ((1000.0, AheadProgress(10, 40, 0.25, 60.0)),    # first: printed
                         (1010.0, AheadProgress(20, 40, 0.5, 70.0)),     # 10 s later: not
                         (1075.0, AheadProgress(30, 40, 0.75, 135.0))):  # 75 s after the first: printed
        now[0] = at
        report(progress)
    assert capsys.readouterr().err.splitlines() == [
        "memarch: embedding ahead: 10 / 40 texts, ~3 min left",
        "memarch: embedding ahead: 30 / 40 texts, ~1 min left"]


@pytest.mark.integration
def test_a_failed_worker_is_counted_and_the_texts_left_to_the_run(tmp_path):
    missing_model = str(tmp_path / "no-such-model")
    report = embed_ahead(Embedder(missing_model, cache_dir=tmp_path), [f"t{i}" for i in range(8)], workers=2,
                         min_texts=1)
    assert (report.workers, report.failed_workers, report.computed, report.missing) == (2, 2, 0, 8)


@pytest.mark.integration
def test_evaluate_embeds_ahead_and_the_stream_computes_nothing(tiny, tmp_path, monkeypatch):
    monkeypatch.setattr(ahead_module, "MIN_TEXTS", 1)
    resources = Resources(embedder=Embedder("all-MiniLM-L6-v2", cache_dir=tmp_path), cache_dir=tmp_path)
    result = evaluate(ARCH, tiny, split="search", resources=resources)
    assert not result.failed
    assert result.cost["embed_ahead_computed"] > 0 and result.cost["embed_ahead_missing"] == 0
    assert result.cost["embeddings_computed"] == 0  # the run found every vector in the cache
    again = evaluate(ARCH, tiny, split="search", resources=Resources(
        embedder=Embedder("all-MiniLM-L6-v2", cache_dir=tmp_path), cache_dir=tmp_path))
    assert "embed_ahead_s" not in again.cost  # warm: nothing to embed, no worker started
    assert again.score == result.score


@pytest.mark.integration
def test_a_pruned_trial_embeds_as_it_goes(tiny, tmp_path, monkeypatch):
    started = []
    def fake(embedder, texts, **_):
        started.append(len(texts))
        return ahead_module.AheadReport(requested=len(texts), missing=len(texts))  # never marked known

    monkeypatch.setattr(ahead_module, "embed_ahead", fake)

    def run(**kwargs):
        resources = Resources(embedder=Embedder("all-MiniLM-L6-v2", cache_dir=tmp_path), cache_dir=tmp_path)
        return evaluate(ARCH, tiny, split="search", resources=resources, limit=2, **kwargs)

    run(on_instance=lambda *a: False)
    assert started == []  # a pruner may stop it after one dialogue: nothing embedded ahead
    run()
    assert len(started) == 1 and started[0] > 0


@pytest.mark.integration
def test_a_run_whose_texts_an_earlier_run_left_in_the_cache_does_not_list_them(tiny, tmp_path, monkeypatch):
    """The second evaluate of the same texts skips listing them (a sixth of a warm LongMemEval_S run):
    an earlier one marked them all cached. Another split, another encoder's knobs, or another
    embedder are other texts: listed again."""
    from memarch.benchmarks.evaluation import texts_ahead

    monkeypatch.setattr(ahead_module, "MIN_TEXTS", 1)
    listed = []
    real = texts_ahead.program_texts
    monkeypatch.setattr(texts_ahead, "program_texts", lambda p, b: listed.append(b.split_name) or real(p, b))

    def run(arch=ARCH, split="search", model="all-MiniLM-L6-v2"):
        resources = Resources(embedder=Embedder(model, cache_dir=tmp_path), cache_dir=tmp_path)
        return evaluate(arch, tiny, split=split, resources=resources)

    first = run()
    assert listed == ["search"] and first.cost["embed_ahead_computed"] > 0
    again = run()
    assert listed == ["search"]  # not listed: known
    assert again.score == first.score and again.cost["embeddings_computed"] == 0
    run(split="validation")
    run(arch=ARCH.replace(params={"encode:turn.window": 2}))
    assert listed == ["search", "validation", "search"]
    run(model="all-MiniLM-L6-v2-128")
    assert listed[-1] == "search" and len(listed) == 4

"""`fewer_collections`: the collector's first threshold raised while a trial runs, the thresholds
before it restored after (nested blocks and threads too), and a trial's result unchanged by it."""
from __future__ import annotations

import gc
import threading

from memarch.pipeline.collector import GEN0, fewer_collections


def test_threshold_raised_inside_and_restored_after():
    before = gc.get_threshold()
    with fewer_collections():
        assert gc.get_threshold()[0] == max(GEN0, before[0])
        assert gc.get_threshold()[1:] == before[1:]
        with fewer_collections(gen0=5):  # nested: the outer setting stays
            assert gc.get_threshold()[0] == max(GEN0, before[0])
        assert gc.get_threshold()[0] == max(GEN0, before[0])
    assert gc.get_threshold() == before


def test_never_lowers_a_higher_threshold_and_restores_after_an_exception():
    before = gc.get_threshold()
    gc.set_threshold(GEN0 * 2, *before[1:])
    try:
        try:
            with fewer_collections():
                assert gc.get_threshold()[0] == GEN0 * 2
                raise RuntimeError("trial failed")
        except RuntimeError:
            pass
        assert gc.get_threshold() == (GEN0 * 2, *before[1:])
    finally:
        gc.set_threshold(*before)


def test_threads_restore_once_the_last_block_ends():
    before = gc.get_threshold()
    inside, release = threading.Event(), threading.Event()

    def trial():
        with fewer_collections():
            inside.set()
            release.wait(5)

    t = threading.Thread(target=trial)
    t.start()
    inside.wait(5)
    with fewer_collections():
        pass  # this block ends first: the other thread's trial still runs
    assert gc.get_threshold()[0] == max(GEN0, before[0])
    release.set()
    t.join(5)
    assert gc.get_threshold() == before


def test_a_trial_scores_the_same_and_leaves_the_thresholds(hash_resources):
    from memarch.benchmarks import get_benchmark
    from memarch.benchmarks.evaluation.evaluate import evaluate
    from memarch.pipeline.architecture import Architecture

    bench = get_benchmark("generated", conversations=2)
    arch = Architecture(("turn",), "vector", "hybrid", "lightweight")
    before = gc.get_threshold()
    with_fewer = evaluate(arch, bench, split="search", resources=hash_resources)
    assert gc.get_threshold() == before
    gc.disable()  # no collection at all: the same result (cycles only decide when memory is freed)
    try:
        without = evaluate(arch, bench, split="search", resources=hash_resources)
    finally:
        gc.enable()
    assert with_fewer.score == without.score
    assert [o.retrieved_ids for o in with_fewer.outcomes] == [o.retrieved_ids for o in without.outcomes]

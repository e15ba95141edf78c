"""The compile / compare progress bar: full evaluations (a pruned trial by its share), the best complete
score, pruned trials, new embeddings and the embedding cache's hit rate; and the counters it reads."""
from __future__ import annotations

from memarch.benchmarks.evaluation.evaluate import evaluate
from memarch.benchmarks.generated import GeneratedConversations
from memarch.cli._progress import Progress
from memarch.pipeline.embed import Embedder
from memarch.pipeline.presets import get_preset
from memarch.pipeline.resources import Resources
from memarch.pipeline.space import ArchitectureSpace
from memarch.pipeline.trial import TrialResult


def _result(objective, computed, requested, instances=None):
    return TrialResult(architecture=None, benchmark="b", split="search", score=objective,
                       cost={"embeddings_computed": computed, "embeddings_requested": requested},
                       metadata={"instances": instances} if instances else {})


def test_postfix_counts_pruned_trials_and_the_hit_rate_over_the_study():
    bar = Progress(4, "test")
    assert bar.postfix() == "best none complete, new embeddings 0"  # nothing asked yet: no rate
    replayed = _result(0.5, 0, 0, instances={"done": 1, "total": 5})
    replayed.cost = {}  # a replayed partial result carries no costs
    bar(0, None, replayed)
    assert bar.postfix() == "best none complete, pruned 1, new embeddings 0"
    bar(1, None, _result(0.4, 30, 100))
    bar(2, None, _result(0.6, 10, 100, instances={"done": 2, "total": 5}))
    assert bar.postfix() == "best 0.400, pruned 2, new embeddings 40 (80% cached)"
    assert abs(bar.bar.n - (0.2 + 1 + 0.4)) < 1e-9
    bar.close()


def test_the_embedder_counts_texts_asked_for_and_computed(tmp_path):
    e = Embedder("hash", cache_dir=tmp_path)
    e.embed(["a", "b", "a"])
    e.embed([])
    e.embed(["b", "c"])
    assert (e.requested, e.computed) == (5, 3)
    again = Embedder("hash", cache_dir=tmp_path)  # the disk cache: asked for, not computed
    again.embed(["a", "c"])
    assert (again.requested, again.computed) == (2, 0)


def test_a_trial_reports_what_it_asked_the_embedder_for(tmp_path):
    bench = GeneratedConversations(conversations=1, sessions=3, distractors=2, seed=0)
    resources = Resources(embedder=Embedder("hash", cache_dir=tmp_path), cache_dir=tmp_path)
    arch = get_preset("memp", ArchitectureSpace("conversation", lm_available=False))
    first = evaluate(arch, bench, split="all", resources=resources, limit=5)
    second = evaluate(arch, bench, split="all", resources=resources, limit=5)
    assert first.cost["embeddings_requested"] >= first.cost["embeddings_computed"] > 0
    assert second.cost["embeddings_computed"] == 0 and second.cost["embeddings_requested"] > 0

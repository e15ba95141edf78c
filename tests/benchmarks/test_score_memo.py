"""The scores of a read kept for a later read that returns the same context and ranking
(`run_stream(score_memo=...)`, what a landscape shares across its passes): a stream scored through a
memo gives the results of one scored without, and a second pass over the same memory is scored from
the memo without new entries (each read's context, sources and ranking were seen)."""
from __future__ import annotations

from memarch.benchmarks.evaluation.settings import EvaluationSettings
from memarch.benchmarks.evaluation.stream import run_stream
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.program import MemoryProgram

ARCH = Architecture(("turn", "event"), "vector", "hybrid", "lightweight")


def _run(bench, res, memo):
    program = MemoryProgram(ARCH, resources=res, top_k=8, context_budget=120)
    settings = EvaluationSettings(context_budget=120, top_k=8, metric="answer_span")
    def shallow(query, *, top_k=None, context_budget=None):  # another context of the same question
        return program.read(query, top_k=2, context_budget=context_budget)

    result = run_stream(program, bench, settings, readers=[program.read, shallow], attribute_all=True,
                        score_memo=memo)
    return [r.to_dict() for r in result]


def _plain(results):
    for r in results:
        r["cost"] = {}
    return results


def test_a_memo_changes_no_score_and_serves_a_second_pass(small_generated, hash_res):
    without = _plain(_run(small_generated, hash_res, None))
    memo: dict = {}
    first = _plain(_run(small_generated, hash_res, memo))
    assert first == without
    assert any(k[0] == "context" for k in memo) and any(k[0] == "ranking" for k in memo)
    size = len(memo)
    second = _plain(_run(small_generated, hash_res, memo))
    assert second == without and len(memo) == size

"""Pareto utilities and the selection rules: dominance, sorting, exact hypervolume on hand-computed
fronts, the knee, cost limits, objective and --select parsing."""
from __future__ import annotations

import pytest

from memarch.errors import MemarchError
from memarch.optimizers.search.pareto import (dominates, exact_hypervolume, hypervolume, knee, non_dominated,
                                       non_dominated_sort, normalise, reference_point)
from memarch.optimizers.search.selection import Selection, parse_selection, select
from memarch.optimizers.search.objectives import directions, parse_objectives


def test_dominance_and_sorting():
    pts = [(0.8, 100), (0.7, 50), (0.6, 80), (0.8, 100), (0.5, 200)]
    assert dominates((0.8, 100), (0.6, 100)) and dominates((0.7, 50), (0.6, 80))
    assert not dominates((0.8, 100), (0.8, 100)) and not dominates((0.8, 100), (0.7, 50))
    assert non_dominated(pts) == [0, 1, 3]  # equal points are both kept
    assert non_dominated_sort(pts) == [[0, 1, 3], [2], [4]]


def test_exact_hypervolume_on_hand_computed_fronts():
    # 2-D: [0.2,1]x[0.6,1] (0.32) and [0.5,1]x[0.3,1] (0.35) overlap in [0.5,1]x[0.6,1] (0.2)
    assert exact_hypervolume([(0.2, 0.6), (0.5, 0.3)], (1, 1)) == pytest.approx(0.47)
    # a dominated point and one beyond the reference add nothing
    assert exact_hypervolume([(0.2, 0.6), (0.5, 0.3), (0.6, 0.7), (1.2, 0.0)], (1, 1)) == pytest.approx(0.47)
    # 3-D: [0.5,1]^3 (0.125) and [0,1]^2x[0.9,1] (0.1) overlap in [0.5,1]^2x[0.9,1] (0.025)
    assert exact_hypervolume([(0.5, 0.5, 0.5), (0, 0, 0.9)], (1, 1, 1)) == pytest.approx(0.2)
    assert exact_hypervolume([(0.25,)], (1,)) == pytest.approx(0.75)
    assert exact_hypervolume([], (1, 1)) == 0.0


def test_hypervolume_normalises_against_a_shared_reference():
    every = [(0.8, 100.0), (0.6, 50.0), (0.5, 200.0)]
    ref = reference_point(every)
    assert ref == pytest.approx((0.0, 220.0))
    assert normalise((0.8, 110.0), ref) == pytest.approx((0.2, 0.5))
    # (0.8, 110) alone: (1 - 0.2) x (1 - 0.5)
    assert hypervolume([(0.8, 110.0)], ref) == pytest.approx(0.4)
    # a front that adds a cheaper point dominates more of the same box
    assert hypervolume([(0.8, 110.0), (0.6, 22.0)], ref) > hypervolume([(0.8, 110.0)], ref)
    assert reference_point([(0.5, 0.0)]) == (0.0, 1.0)  # a cost 0 everywhere separates nothing


def test_knee():
    # almost the best quality at under a quarter of the memory
    assert knee([(0.9, 900), (0.85, 200), (0.5, 100)]) == 1
    assert knee([(0.9, 900), (0.5, 100)]) == 0  # two points are both on the line: higher quality
    assert knee([(0.7, 10)]) == 0
    assert knee([(0.9, 900, 5), (0.85, 200, 4), (0.5, 100, 1)]) == 1


def _cands():
    return {"a": {"quality": 0.9, "memory_words": 900, "read_p95": 5},
            "b": {"quality": 0.85, "memory_words": 200, "read_p95": 4},
            "c": {"quality": 0.5, "memory_words": 100, "read_p95": 1},
            "d": {"quality": 0.4, "memory_words": 300, "read_p95": 9}}  # dominated by b


def test_selection_rules_on_the_validation_front():
    two = ("quality", "memory_words")
    assert select(_cands(), two, parse_selection("quality", two)) == ("a", ["a", "b", "c"])
    assert select(_cands(), two, parse_selection("knee", two))[0] == "b"
    assert select(_cands(), two, parse_selection("memory_words<=250", two))[0] == "b"
    assert select(_cands(), two, parse_selection("read_p95 <= 1.5", two))[0] == "c"
    with pytest.raises(MemarchError, match=r"memory_words<=50: no candidate .* cheapest, c, has 100 words"):
        select(_cands(), two, parse_selection("memory_words<=50", two))


def test_single_objective_ties_go_to_lower_memory_then_read_latency():
    cands = {"a": {"quality": 0.8, "memory_words": 500, "read_p95": 1},
             "b": {"quality": 0.8, "memory_words": 300, "read_p95": 9},
             "c": {"quality": 0.8, "memory_words": 300, "read_p95": 2},
             "d": {"quality": 0.7, "memory_words": 10, "read_p95": 1}}
    assert select(cands, ("quality",), Selection())[0] == "c"
    assert "ties broken by lower memory_words, then read_p95" in Selection().describe()


@pytest.mark.parametrize("text,needle", [("memory_words", "must start with quality"),
                                         ("quality,memory", "unknown memory"),
                                         ("quality,read_p95,read_p95", "twice"), ("", "must start with quality")])
def test_bad_objectives(text, needle):
    with pytest.raises(MemarchError, match=needle):
        parse_objectives(text)


@pytest.mark.parametrize("text,objectives,needle", [("knee", ("quality",), "at least two"),
                                                    ("memory_words<5000", ("quality",), "expected quality, knee"),
                                                    ("quality_tokens<=3", ("quality",), "COST one of"),
                                                    ("best", ("quality", "read_p95"), "expected quality")])
def test_bad_selection(text, objectives, needle):
    with pytest.raises(MemarchError, match=needle):
        parse_selection(text, objectives)


def test_objectives_and_directions():
    assert parse_objectives(None) == ("quality",)
    objs = parse_objectives(" quality, memory_words ,read_p95")
    assert objs == ("quality", "memory_words", "read_p95")
    assert directions(objs) == ["maximize", "minimize", "minimize"]

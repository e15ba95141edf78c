"""The run's counts in words: every count says what it counts, the pruner is named with how many
trials it stopped (0 too) and what they cost in full evaluations — never a bare ``pruned_cost_pct``."""
from __future__ import annotations

from memarch.optimizers.compile.counts import COUNT_WORDS, NOTHING_COUNTED, describe_counts, pruner_phrase


def test_each_count_is_said_in_words():
    line = describe_counts({"evaluated": 8, "invalid": 2, "repeats": 1, "failed": 0, "dropped_proposals": 3})
    assert line == ("3 proposals dropped (invalid, or evaluated already); 2 invalid draws (pruned before any "
                    "evaluation); 1 repeated draws of an evaluated architecture (not evaluated again)")
    assert describe_counts({"evaluated": 8, "repeats": 0}) == NOTHING_COUNTED


def test_the_pruner_is_named_even_when_it_stopped_nothing():
    assert describe_counts({"evaluated": 5, "pruned": 0, "unstaged": 0}, pruner="wilcoxon") == \
        "pruner wilcoxon: 0 trials stopped early"
    assert pruner_phrase("none", {"pruned": 3}) is None


def test_what_the_pruned_trials_cost_is_a_share_of_full_evaluations():
    line = describe_counts({"pruned": 4, "pruned_in_study": 5, "pruned_cost_pct": 167}, pruner="sha")
    assert line == ("pruner sha: 5 trials stopped early, which cost 1.67 full evaluations in all (the budget "
                    "counts full evaluations)")
    assert "pct" not in line and "pruned_cost" not in line


def test_every_count_the_search_and_the_samplers_report_has_words():
    """The names `Search.stats`, the run and the samplers' `stats()` report (grep-able in the
    package) each have their words, so no count is shown by its key alone."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[3] / "memarch" / "optimizers"
    reported = set()
    for path in [*root.joinpath("samplers").rglob("*.py"), root / "search" / "runner.py"]:
        text = path.read_text(encoding="utf-8")
        for body in re.findall(r"def stats\(self\)[^\n]*\n((?:\s{8}.*\n|\n)+)", text):
            reported |= set(re.findall(r'"([a-z_]+)":', body))
    from memarch.optimizers.compile.counts import NOT_LISTED

    unnamed = sorted(reported - set(COUNT_WORDS) - set(NOT_LISTED) - {"diagnoser", "proposer", "none"})
    assert not unnamed, unnamed

"""The champion guard: a new architecture replaces the champion only when a paired sign test on
per-query outcomes says it is better (alpha 0.10, as in the AutoMem release), so noise on a small
search batch does not move the search."""
from __future__ import annotations

from functools import lru_cache

from scipy.stats import binomtest

from memarch.optimizers.search.history import History, TrialRecord

ALPHA = 0.10


def sign_test(candidate: TrialRecord, champion: TrialRecord, history: History | None = None) -> float | None:
    """One-sided p-value that ``candidate`` wins more paired queries than it loses; None when the two
    results share no query ids (then only the objectives can be compared)."""
    wins, losses, shared = (history or History()).paired(candidate, champion)
    if not shared:
        return None
    if wins + losses == 0:
        return 1.0
    return _binom_greater(wins, wins + losses)


@lru_cache(maxsize=65536)
def _binom_greater(wins: int, n: int) -> float:
    return float(binomtest(wins, n, 0.5, alternative="greater").pvalue)


def beats(candidate: TrialRecord, champion: TrialRecord, alpha: float = ALPHA, history: History | None = None) -> bool:
    if candidate.score <= champion.score:
        return False
    p = sign_test(candidate, champion, history)
    return True if p is None else p < alpha


def select_champion(history: History, alpha: float = ALPHA) -> TrialRecord | None:
    """Replay the history in trial order: the champion changes only on a significant win.

    Example::

        champ = select_champion(History.from_study(study))
    """
    champ: TrialRecord | None = None
    for r in history.records:
        if champ is None or beats(r, champ, alpha, history):
            champ = r
    return champ

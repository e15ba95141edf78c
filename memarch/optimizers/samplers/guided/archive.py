"""The open-ended archive of ALMA: every evaluated architecture of a study, how often each was chosen
as a parent (visits), and the parent distribution — softmax(T=0.5) over
sigmoid(score - no-memory score) - 0.5 * log1p(visits). Everything lives in the study, so a
resumed study and several workers share one archive."""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from memarch.optimizers.search.history import History, HistoryCache, TrialRecord

if TYPE_CHECKING:
    import optuna

TEMPERATURE = 0.5
VISIT_WEIGHT = 0.5
ROUND_PREFIX = "archive_round:"  # study user attrs, one per round: the parents chosen and their children
NO_MEMORY_ATTR = "no_memory_objective"  # study user attr (its name in saved studies): {"value": float, "source": str}


def parent_scores(scores: Any, visits: Any, no_memory: float = 0.0) -> np.ndarray:
    """ALMA's parent score: sigmoid(score - no-memory score) - 0.5 * log1p(visits)."""
    gain = np.asarray(scores, dtype=float) - float(no_memory)
    return 1.0 / (1.0 + np.exp(-gain)) - VISIT_WEIGHT * np.log1p(np.asarray(visits, dtype=float))


def parent_probabilities(scores: Any, visits: Any, no_memory: float = 0.0,
                         temperature: float = TEMPERATURE) -> np.ndarray:
    """Softmax of `parent_scores` at ``temperature``: the chance one draw picks each archive member.

    Example::

        parent_probabilities([0.4, 0.2], visits=[3, 0])   # the unvisited one is likelier
    """
    z = parent_scores(scores, visits, no_memory) / float(temperature)
    if z.size == 0:
        return z
    e = np.exp(z - z.max())
    return e / e.sum()


def sample_parents(rng: np.random.Generator, probabilities: np.ndarray, k: int) -> list[int]:
    """``k`` independent draws from ``probabilities``, repeats dropped (so up to ``k`` parents), in
    draw order: every draw follows the formula exactly."""
    if probabilities.size == 0 or k < 1:
        return []
    out: list[int] = []
    for i in rng.choice(probabilities.size, size=int(k), p=probabilities):
        if int(i) not in out:
            out.append(int(i))
    return out


@dataclass
class Archive:
    """The study's archive: evaluated architectures, their visits and the no-memory score.

    Example::

        archive = Archive.from_study(study)
        archive.probabilities()            # one per archive member, in trial order
        archive.visits["turn|vector|hybrid|lightweight"]

    Args:
        records: every distinct evaluated architecture, in trial order.
        visits: architecture key -> times drawn as a parent and given a child (every round of every
            worker; a parent with nothing left to edit is not a visit).
        no_memory: the score the gains are measured from.
        no_memory_source: where that number came from (shown in the round artifacts).
    """

    records: list[TrialRecord]
    visits: Counter = field(default_factory=Counter)
    no_memory: float = 0.0
    no_memory_source: str = "default 0"

    @classmethod
    def from_study(cls, study: "optuna.Study", cache: HistoryCache | None = None,
                   history: History | None = None) -> "Archive":
        history = history or History.from_study(study, cache)
        attrs = study.user_attrs
        visits: Counter = Counter()
        for name, rec in attrs.items():
            if name.startswith(ROUND_PREFIX) and isinstance(rec, dict):
                visits.update(rec.get("parents", []))
        nm = attrs.get(NO_MEMORY_ATTR)
        if isinstance(nm, dict) and isinstance(nm.get("value"), (int, float)) and math.isfinite(nm["value"]):
            return cls(history.records, visits, float(nm["value"]), str(nm.get("source", "study")))
        return cls(history.records, visits)

    def __len__(self) -> int:
        return len(self.records)

    def visit_counts(self) -> list[int]:
        return [self.visits.get(r.architecture.key(), 0) for r in self.records]

    def probabilities(self, temperature: float = TEMPERATURE) -> np.ndarray:
        return parent_probabilities([r.score for r in self.records], self.visit_counts(), self.no_memory,
                                    temperature)

    def sample(self, rng: np.random.Generator, k: int, temperature: float = TEMPERATURE) -> list[TrialRecord]:
        """Up to ``k`` distinct parents drawn by the formula."""
        return [self.records[i] for i in sample_parents(rng, self.probabilities(temperature), k)]


def set_no_memory(study: "optuna.Study", value: float, source: str) -> None:
    """Keep the no-memory score with the study (set once: resume and other workers read it)."""
    study.set_user_attr(NO_MEMORY_ATTR, {"value": float(value), "source": source})


def record_round(study: "optuna.Study", tag: str, index: int, record: dict[str, Any]) -> None:
    """One round's parents and children, under a key no other worker writes (no lost updates)."""
    study.set_user_attr(f"{ROUND_PREFIX}{tag}:{index:04d}", record)

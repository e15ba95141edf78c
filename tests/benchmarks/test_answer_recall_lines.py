"""`answer_recall` normalises a context line by line (each line remembered): the same value as
normalising the whole context at once, over random contexts with the characters that normalisation
touches (commas, punctuation, articles, case, line breaks, other whitespace) and budget cuts."""
from __future__ import annotations

import random

from memarch.benchmarks.metrics.scores import answer_recall, answer_words
from memarch.pipeline.retrieval import truncate_words

WORDS = ["The", "a", "an", "and", "Ana", "Lisbon,", "moved", "in", "May", "2023.", "1,000", "it's", "(Rui)",
         "the-end", "AND", "Ångström", "İstanbul", "x\u2028y", "tab\there", "u.s.a", "—", "A.", "an?"]


def reference(answer, context, budget):  # the whole context normalised at once (before the change)
    gold = set(answer_words(answer))
    if not gold:
        return 0.0
    if budget is not None:
        context = truncate_words(context, budget)
    return len(gold & set(answer_words(context))) / len(gold)


def test_line_by_line_equals_the_whole_context():
    rng = random.Random(7)
    for _ in range(2000):
        lines = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 12))) for _ in range(rng.randint(1, 6))]
        context = rng.choice(["\n", "\n\n", " \n", "\r\n"]).join(lines)
        answer = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
        budget = rng.choice([None, 1, 5, 20, 200])
        assert answer_recall(answer, context, budget) == reference(answer, context, budget), (answer, context, budget)

"""Scores for conversational memory: the LM-free metrics (the strict `answer_span`, re-exported
from its own module, the bag-of-words answer recall, evidence recall within a context budget) and
LoCoMo's official QA scoring (word F1 — SQuAD's "token F1" — with Porter stemming after SQuAD
normalisation, with its category rules), reimplemented.

Example::

    answer_span("7 May 2023", "[turn 2023-05-08] I went on 7 May", context_budget=200)    # 0.0
    answer_recall("7 May 2023", "[turn 2023-05-08] I went on 7 May", context_budget=200)  # 2/3
    qa_f1("Psychology; counseling", "psychology", "open-domain")                        # 1.0
"""
from __future__ import annotations

import functools
import re
import string
from collections import Counter
from typing import Iterable

from memarch.benchmarks.metrics.answer_span import answer_span  # noqa: F401  (re-exported beside answer_recall)
from memarch.benchmarks.metrics.porter import stem
from memarch.pipeline.retrieval import truncate_words
from memarch.pipeline.retrieval import DEFAULT_CONTEXT_BUDGET

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCT = str.maketrans("", "", string.punctuation)
# LoCoMo's adversarial rule: the answer is right iff it says the information is not there.
ABSTENTION_PHRASES = ("no information available", "not mentioned")
ABSTAIN = "No information available."


def normalize_answer(text: object) -> str:
    """LoCoMo's normalisation: drop commas, lower-case, strip punctuation and articles, squeeze spaces."""
    s = str(text).replace(",", "").lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", s).split())


def answer_words(text: object) -> list[str]:
    """The words of ``text`` after `normalize_answer` (a new list)."""
    if isinstance(text, str) and len(text) <= 200:  # gold answers repeat trial after trial: memoised
        return list(_answer_words(text))
    return normalize_answer(text).split()


@functools.lru_cache(maxsize=1 << 15)
def _answer_words(text: str) -> tuple[str, ...]:
    return tuple(normalize_answer(text).split())


def word_f1(prediction: object, gold: object) -> float:
    """F1 over the stemmed words of the normalised prediction and gold (LoCoMo ``f1_score``, SQuAD's
    "token F1": its tokens are these whitespace words)."""
    pred = [stem(w) for w in answer_words(prediction)]
    ref = [stem(w) for w in answer_words(gold)]
    common = Counter(pred) & Counter(ref)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred), same / len(ref)
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: object, gold: object) -> float:
    """Multi-hop rule: mean over comma-separated gold parts of the best F1 over predicted parts."""
    preds = [p.strip() for p in str(prediction).split(",")]
    golds = [g.strip() for g in str(gold).split(",")]
    return sum(max(word_f1(p, g) for p in preds) for g in golds) / len(golds)


def is_abstention(prediction: object) -> bool:
    low = str(prediction).lower()
    return any(p in low for p in ABSTENTION_PHRASES)


def qa_f1(prediction: object, gold: object, category: str) -> float:
    """LoCoMo's per-category QA score: multi-hop averages comma-split sub-answers, open-domain
    keeps the gold up to its first ';', adversarial is 1 iff the prediction abstains."""
    if category == "adversarial":
        return 1.0 if is_abstention(prediction) else 0.0
    if category == "multi-hop":
        return multi_answer_f1(prediction, gold)
    if category == "open-domain":
        gold = str(gold).split(";")[0].strip()
    return word_f1(prediction, gold)


def answer_recall(answer: object, context: str, context_budget: int | None = DEFAULT_CONTEXT_BUDGET) -> float:
    """Share of the gold answer's distinct normalised words present in ``context`` cut at the budget.

    The lenient LM-free metric (ANCHORS 6; the default is the stricter `answer_span`): no reader, so it measures whether memory *delivered* the
    answer, not whether a model would use it. Unanswerable questions have no gold answer and are
    scored only with an LM (callers skip them).
    """
    gold = set(answer_words(answer))
    if not gold:
        return 0.0
    if context_budget is not None and len(context.split()) > context_budget:
        context = truncate_words(context, context_budget)  # str.split and truncate_words agree on words
    # Normalisation never joins or splits across a line break, so the context's words are its
    # lines' words; each line (a retrieved item) recurs read after read and is normalised once.
    have: set[str] = set()
    for line in context.split("\n"):
        have.update(_line_words(line))
    return len(gold & have) / len(gold)


@functools.lru_cache(maxsize=1 << 15)
def _line_words(line: str) -> frozenset[str]:
    return frozenset(normalize_answer(line).split())


def evidence_recall(gold_ids: Iterable[str], covered_ids: Iterable[str]) -> float | None:
    """Share of gold evidence ids covered by the provenance of retrieved items (None: no gold)."""
    gold = set(gold_ids)
    if not gold:
        return None
    return len(gold & set(covered_ids)) / len(gold)


def mean(values: Iterable[float | None]) -> float:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else 0.0

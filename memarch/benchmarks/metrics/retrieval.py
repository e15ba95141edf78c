"""Standard retrieval metrics at turn level over the gold evidence ids, computed by `ranx`
(not by hand): ``hit@k`` (ranx ``hit_rate@k``: 1 iff a gold turn is in the first k), ``recall@k``,
``ndcg@k`` (binary relevance, Järvelin's DCG) and ``mrr``, for k in 1, 5, 10.

Per question the *run* is the ranked list of turn ids that the retrieved items cover: the source
turn ids of each item's provenance, in item order, deduplicated, so a turn's rank is the rank of
the first retrieved item covering it (an item covering several turns gives them consecutive ranks,
in provenance order). The *qrels* are the question's gold evidence ids; a question without evidence
gets no value (None; callers count it as skipped). The k counts turns, not items.

Example::

    retrieval_scores(["t2"], ["t1", "t2", "t3"])["mrr"]      # 0.5
    retrieval_scores(["t2"], ["t1", "t2", "t3"])["ndcg@5"]   # 1 / log2(3) = 0.6309
    retrieval_scores([], ["t1"])                              # None (skipped)
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

KS = (1, 5, 10)
RETRIEVAL_METRICS = tuple(f"{m}@{k}" for m in ("hit", "recall", "ndcg") for k in KS) + ("mrr",)
_RANX = {**{f"hit@{k}": f"hit_rate@{k}" for k in KS}, **{m: m for m in RETRIEVAL_METRICS if not m.startswith("hit@")}}
_NOTHING = "\x00no-turn"  # the run of a question whose retrieved items cover no turn (ranx needs one doc)


def ranked_turns(items: Iterable[Any]) -> list[str]:
    """The turn ids the retrieved items cover, in rank order, each at its first covering item."""
    return list(dict.fromkeys(str(s) for it in items for s in getattr(it, "source_ids", ())))


def _ranx_inputs(questions: dict[str, tuple[Iterable[str], Sequence[str]]]):
    from ranx import Qrels, Run  # imported on first use: ranx (numba) takes seconds to import

    qrels = {qid: {str(g): 1 for g in gold} for qid, (gold, _) in questions.items()}
    run = {qid: ({t: float(len(ranked) - i) for i, t in enumerate(ranked)} or {_NOTHING: 0.0})
           for qid, (_, ranked) in questions.items()}
    return Qrels(qrels), Run(run)


def retrieval_scores_many(questions: dict[str, tuple[Iterable[str], Sequence[str]]],
                          metrics: Sequence[str] = RETRIEVAL_METRICS) -> dict[str, dict[str, float]]:
    """Per question id ``{metric: value}`` for ``{qid: (gold_ids, ranked_turn_ids)}``; questions
    without gold are left out (the caller counts them)."""
    import warnings

    from ranx import evaluate

    scored = {qid: (list(gold), list(ranked)) for qid, (gold, ranked) in questions.items() if list(gold)}
    if not scored:
        return {}
    qrels, run = _ranx_inputs(scored)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba's uint64 -> int64 cast warning inside ranx
        values = evaluate(qrels, run, [_RANX[m] for m in metrics], return_mean=False, make_comparable=False)
    if len(metrics) == 1:
        values = {_RANX[metrics[0]]: values}
    # ranx keeps the qrels' query order (sorted); map back by its own ids
    order = list(qrels.keys())
    return {qid: {m: float(values[_RANX[m]][i]) for m in metrics} for i, qid in enumerate(order)}


def retrieval_scores(gold_ids: Iterable[str], ranked: Sequence[str],
                     metrics: Sequence[str] = RETRIEVAL_METRICS) -> dict[str, float] | None:
    """One question's retrieval metrics (None: no gold evidence, skipped)."""
    return retrieval_scores_many({"q": (gold_ids, ranked)}, metrics).get("q")

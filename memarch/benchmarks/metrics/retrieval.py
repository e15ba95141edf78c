"""Standard retrieval metrics at turn level over the gold evidence ids, computed by trec_eval (its
Python bindings, `pytrec_eval`; not by hand): ``hit@k`` (trec_eval ``success_k``: 1 iff a gold turn
is in the first k), ``recall@k``, ``ndcg@k`` (``ndcg_cut_k``, binary relevance, Järvelin's DCG) and
``mrr`` (``recip_rank``), for k in 1, 5, 10. trec_eval is compiled C: no JIT to pay in each process
(ranx, used before, compiled numba kernels in every process, ~7-10 s; its values are equal, tested).

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
# memarch's name -> trec_eval's measure (as `pytrec_eval` asks for it) and the key of its value
_TREC = {**{f"hit@{k}": ("success", f"success_{k}") for k in KS},
         **{f"recall@{k}": ("recall", f"recall_{k}") for k in KS},
         **{f"ndcg@{k}": ("ndcg_cut", f"ndcg_cut_{k}") for k in KS}, "mrr": ("recip_rank", "recip_rank")}
_NOTHING = "\x00no-turn"  # the run of a question whose retrieved items cover no turn (a run needs one doc)


def ranked_turns(items: Iterable[Any]) -> list[str]:
    """The turn ids the retrieved items cover, in rank order, each at its first covering item."""
    return list(dict.fromkeys(str(s) for it in items for s in getattr(it, "source_ids", ())))


def _measures(metrics: Sequence[str]) -> set[str]:
    """trec_eval's measure names with their cutoffs: ``{"success.1,5", "recip_rank"}``."""
    cutoffs: dict[str, list[str]] = {}
    for m in metrics:
        measure, _ = _TREC[m]
        cutoffs.setdefault(measure, [])
        if "@" in m:
            cutoffs[measure].append(m.split("@")[1])
    return {f"{measure}.{','.join(ks)}" if ks else measure for measure, ks in cutoffs.items()}


def retrieval_scores_many(questions: dict[str, tuple[Iterable[str], Sequence[str]]],
                          metrics: Sequence[str] = RETRIEVAL_METRICS) -> dict[str, dict[str, float]]:
    """Per question id ``{metric: value}`` for ``{qid: (gold_ids, ranked_turn_ids)}``; questions
    without gold are left out (the caller counts them)."""
    import pytrec_eval

    scored = {str(qid): (list(gold), list(ranked)) for qid, (gold, ranked) in questions.items() if list(gold)}
    if not scored:
        return {}
    qrels = {qid: {str(g): 1 for g in gold} for qid, (gold, _) in scored.items()}
    # Scores strictly decreasing with the rank, so trec_eval's order is the run's (no ties to break).
    run = {qid: ({t: float(len(ranked) - i) for i, t in enumerate(ranked)} or {_NOTHING: 0.0})
           for qid, (_, ranked) in scored.items()}
    values = pytrec_eval.RelevanceEvaluator(qrels, _measures(metrics)).evaluate(run)
    return {qid: {m: float(values[qid][_TREC[m][1]]) for m in metrics} for qid in scored}


def retrieval_scores(gold_ids: Iterable[str], ranked: Sequence[str],
                     metrics: Sequence[str] = RETRIEVAL_METRICS) -> dict[str, float] | None:
    """One question's retrieval metrics (None: no gold evidence, skipped)."""
    return retrieval_scores_many({"q": (gold_ids, ranked)}, metrics).get("q")

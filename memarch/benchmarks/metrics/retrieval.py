"""Standard retrieval metrics over the gold evidence, computed by trec_eval (its
Python bindings, `pytrec_eval`; not by hand): ``hit@k`` (trec_eval ``success_k``: 1 iff a gold turn
is in the first k), ``recall@k``, ``ndcg@k`` (``ndcg_cut_k``, binary relevance, Järvelin's DCG) and
``mrr`` (``recip_rank``), for k in 1, 5, 10. trec_eval is compiled C: no JIT to pay in each process
(ranx, used before, compiled numba kernels in every process, ~7-10 s; its values are equal, tested).

Per question the *run* is the ranked list of turn ids that the retrieved items cover: the source
turn ids of each item's provenance, in item order, deduplicated, so a turn's rank is the rank of
the first retrieved item covering it (an item covering several turns gives them consecutive ranks,
in provenance order). The *qrels* are the question's gold evidence ids; a question without evidence
gets no value (None; callers count it as skipped). The k counts turns, not items.

The same metrics at **session level** (``session_hit@k``, ``session_recall@k``, ``session_ndcg@k`` for k in
1, 3, 5, 10, and ``session_mrr``): gold = the sessions that hold a gold evidence turn, the run = the
sessions of the covered turns, each session at the rank of its best item (`ranked_sessions`); the unit
of the published LoCoMo retrieval numbers (arXiv 2606.04194 ranks whole sessions, docs/benchmarks.md).

Example::

    retrieval_scores(["t2"], ["t1", "t2", "t3"])["mrr"]      # 0.5
    retrieval_scores(["t2"], ["t1", "t2", "t3"])["ndcg@5"]   # 1 / log2(3) = 0.6309
    retrieval_scores([], ["t1"])                              # None (skipped)
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

KS = (1, 5, 10)
SESSION_KS = (1, 3, 5, 10)
RETRIEVAL_METRICS = tuple(f"{m}@{k}" for m in ("hit", "recall", "ndcg") for k in KS) + ("mrr",)
SESSION_PREFIX = "session_"
SESSION_METRICS = tuple(f"{SESSION_PREFIX}{m}@{k}" for m in ("hit", "recall", "ndcg") for k in SESSION_KS) + (
    f"{SESSION_PREFIX}mrr",)
RANKING_METRICS = RETRIEVAL_METRICS + SESSION_METRICS  # every metric trec_eval scores
# memarch's name (without the session prefix) -> trec_eval's measure (as `pytrec_eval` asks for it)
# and the key of its value
_TREC = {**{f"hit@{k}": ("success", f"success_{k}") for k in SESSION_KS},
         **{f"recall@{k}": ("recall", f"recall_{k}") for k in SESSION_KS},
         **{f"ndcg@{k}": ("ndcg_cut", f"ndcg_cut_{k}") for k in SESSION_KS}, "mrr": ("recip_rank", "recip_rank")}
_NOTHING = "\x00no-turn"  # the run of a question whose retrieved items cover no turn (a run needs one doc)


def ranked_turns(items: Iterable[Any]) -> list[str]:
    """The turn ids the retrieved items cover, in rank order, each at its first covering item."""
    return list(dict.fromkeys(str(s) for it in items for s in getattr(it, "source_ids", ())))


def ranked_sessions(turns: Iterable[str], session_of: Mapping[str, str]) -> list[str]:
    """The sessions of ranked turn ids, each at the rank of its first (best) turn; turns of no known
    session are left out."""
    return list(dict.fromkeys(session_of[t] for t in turns if t in session_of))


def gold_sessions(evidence: Iterable[str], session_of: Mapping[str, str]) -> list[str]:
    """The sessions that hold a gold evidence turn (evidence ids of no known turn are left out)."""
    return list(dict.fromkeys(session_of[e] for e in evidence if e in session_of))


def _trec(metric: str) -> tuple[str, str]:
    return _TREC[metric[len(SESSION_PREFIX):] if metric.startswith(SESSION_PREFIX) else metric]


def _measures(metrics: Sequence[str]) -> set[str]:
    """trec_eval's measure names with their cutoffs: ``{"success.1,5", "recip_rank"}``."""
    cutoffs: dict[str, list[str]] = {}
    for m in metrics:
        measure, _ = _trec(m)
        cutoffs.setdefault(measure, [])
        if "@" in m:
            if m.split("@")[1] not in cutoffs[measure]:
                cutoffs[measure].append(m.split("@")[1])
    return {f"{measure}.{','.join(ks)}" if ks else measure for measure, ks in cutoffs.items()}


def retrieval_scores_many(questions: dict[str, tuple[Iterable[str], Sequence[str]]],
                          metrics: Sequence[str] = RETRIEVAL_METRICS) -> dict[str, dict[str, float]]:
    """Per question id ``{metric: value}`` for ``{qid: (gold_ids, ranked_ids)}``; questions without
    gold are left out (the caller counts them). The ids are turns for `RETRIEVAL_METRICS` and
    sessions for `SESSION_METRICS` (one call scores one unit)."""
    import pytrec_eval

    scored = {str(qid): (list(gold), list(ranked)) for qid, (gold, ranked) in questions.items() if list(gold)}
    if not scored:
        return {}
    qrels = {qid: {str(g): 1 for g in gold} for qid, (gold, _) in scored.items()}
    # Scores strictly decreasing with the rank, so trec_eval's order is the run's (no ties to break).
    run = {qid: ({t: float(len(ranked) - i) for i, t in enumerate(ranked)} or {_NOTHING: 0.0})
           for qid, (_, ranked) in scored.items()}
    values = pytrec_eval.RelevanceEvaluator(qrels, _measures(metrics)).evaluate(run)
    keys = [(m, _trec(m)[1]) for m in metrics]
    return {qid: {m: float(got[key]) for m, key in keys} for qid, got in ((q, values[q]) for q in scored)}


def retrieval_scores(gold_ids: Iterable[str], ranked: Sequence[str],
                     metrics: Sequence[str] = RETRIEVAL_METRICS) -> dict[str, float] | None:
    """One question's retrieval metrics (None: no gold evidence, skipped)."""
    return retrieval_scores_many({"q": (gold_ids, ranked)}, metrics).get("q")

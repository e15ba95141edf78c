"""Scoring one question of a stream: read the memory, score the context (answer span, answer recall,
evidence recall, the turn-level retrieval metrics hit@k / recall@k / ndcg@k / mrr; with an LM reader QA F1 and an optional judge), and attribute a failure to the
module that lost the answer."""
from __future__ import annotations

from typing import Any, Callable

from memarch.benchmarks.evaluation.attribution import StoreView, WriteTrace, attribute, gold_rank
from memarch.benchmarks.base import Question
from memarch.benchmarks.metrics.retrieval import RETRIEVAL_METRICS, ranked_turns, retrieval_scores, retrieval_scores_many
from memarch.benchmarks.metrics.scores import ABSTAIN, answer_recall, answer_span, evidence_recall, qa_f1
from memarch.pipeline.trial import QueryOutcome


def objective_fallback(values: dict[str, Any], objective: str) -> str | None:
    """The score that stands in when a question has no value of ``objective`` (e.g. evidence recall
    of a question without gold evidence): the reader's QA F1 when there is one, else the answer span."""
    if values.get(objective) is not None:
        return None
    return "qa_f1" if values.get("qa_f1") is not None else "answer_span"


def objective_score(values: dict[str, Any], objective: str) -> float:
    """A question's objective score from its named scores, with `objective_fallback`."""
    fallback = objective_fallback(values, objective)
    return float(values.get(objective) if fallback is None else (values.get(fallback) or 0.0))


def ask(read: Callable[..., Any] | None, store: Any, namespace: str, q: Question, query, top_k: int,
         budget: int | None, reader: Any, judge: Any, objective: str, threshold: float, trace: WriteTrace,
         view: StoreView, per_query: dict[str, list[float]], attribute_all: bool = False,
         rank_gold: Callable[..., Any] | None = None, pending: list | None = None) -> QueryOutcome | None:
    """Read the memory for ``q``, score the context and attribute a failure; None for an
    unanswerable question without a reader. ``rank_gold``: an (untimed) reader that, for a retrieve
    failure, locates the gold items in a deeper read (`gold_rank`). ``pending``: where the question's
    retrieval metrics wait for `score_retrieval` (one ranx call for a whole stream) unless they are
    the objective, which needs them now."""
    if not q.answerable and reader is None:
        return None  # unanswerable: scored only with an LM
    retrieval = read(query, top_k=top_k, budget_tokens=budget) if read is not None else None
    items = [s.item for s in retrieval.items] if retrieval is not None else []
    context = retrieval.context if retrieval is not None else ""
    values: dict[str, float | None] = {}
    if q.answerable:
        values["answer_span"] = answer_span(q.answer, context, budget)
        values["answer_recall"] = answer_recall(q.answer, context, budget)
        values["evidence_recall"] = evidence_recall(q.evidence, (s for it in items for s in it.source_ids))
    # hit@k / recall@k / ndcg@k / mrr over the gold evidence turns (ranx); none without evidence
    turns = ranked_turns(items)
    deferred = pending is not None and objective not in RETRIEVAL_METRICS
    ranked = None if deferred else retrieval_scores(q.evidence, turns)
    values.update(ranked or {})
    reader_failed = False
    if reader is not None:
        prediction = reader(context, q.text)
        if prediction is None:
            # The reader's answer was unusable: a failed query, never an abstention (which would
            # score 1.0 on an adversarial question).
            reader_failed = True
            values["qa_f1"] = 0.0
            if judge is not None:
                values["judge"] = 0.0
        else:
            # No gold answer means the right answer is to abstain, whatever the category (a
            # LongMemEval ``_abs`` question keeps its type as category).
            values["qa_f1"] = qa_f1(prediction, q.answer or ABSTAIN,
                                    q.category if q.answer is not None else "adversarial")
            if judge is not None:
                verdict = judge(q.text, q.answer or ABSTAIN, prediction)
                values["judge"] = None if verdict is None else float(verdict)
    for name, v in values.items():
        if v is not None:
            per_query[name].append(v)
    fallback = objective_fallback(values, objective)  # counted and shown, never silent
    score = objective_score(values, objective)
    success = score >= threshold
    evidence: dict[str, Any] = {"question": q.text, "gold_answer": q.answer,
                                **{k: v for k, v in values.items() if v is not None}}
    if fallback is not None:
        evidence["objective_fallback"] = fallback
    if ranked is None and not deferred:
        evidence["retrieval_skipped"] = True  # no gold evidence ids: no hit@k / ndcg@k / mrr
    if reader is not None:
        evidence["prediction"] = prediction
        if reader_failed:
            evidence["reader_failed"] = True
    attribution = None
    if not success and q.answerable:
        attribution, facts = attribute(q.evidence, trace, store, namespace, items, view=view)
        evidence.update(facts)
        if attribution == "retrieve" and rank_gold is not None:
            lost = [sid for sid, stage in facts["lost"].items() if stage == "retrieve"]
            evidence.update(gold_rank(rank_gold, query, lost, top_k, len(items)))
    if attribute_all and q.answerable:
        evidence["loss_stage"] = attribution if not success else attribute(
            q.evidence, trace, store, namespace, items, view=view)[0]
    outcome = QueryOutcome(query_id=q.id, score=float(score), success=success, category=q.category,
                           attribution=attribution, evidence=evidence, retrieved_ids=[it.id for it in items])
    if deferred:
        pending.append((outcome, list(q.evidence), turns))
    return outcome


def score_retrieval(pending: list, per_query: dict[str, list[float]]) -> None:
    """The retrieval metrics `ask` deferred, for every question of a stream in one ranx call (a call
    per question costs ~9 ms: 14 s on LoCoMo's 1,540 questions, against ~0.2 s at once), added to
    each outcome's evidence and to ``per_query`` in question order, as `ask` would have."""
    values = retrieval_scores_many({str(i): (gold, turns) for i, (_, gold, turns) in enumerate(pending)})
    for i, (outcome, _, _) in enumerate(pending):
        scored = values.get(str(i))
        if scored is None:
            outcome.evidence["retrieval_skipped"] = True  # no gold evidence ids
            continue
        outcome.evidence.update(scored)
        for name, v in scored.items():
            per_query[name].append(v)
    pending.clear()

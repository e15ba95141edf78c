"""Scoring one question of a stream: read the memory, score the context (the LM-free context
metrics of the metric registry, the turn- and session-level retrieval metrics hit@k / recall@k /
ndcg@k / mrr;
with an LM reader QA F1 and an optional judge), and attribute a failure to the module that lost
the answer."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from memarch.benchmarks.evaluation.attribution import StoreView, WriteTrace, attribute, gold_rank
from memarch.benchmarks.base import Question
from memarch.benchmarks.metrics.official_report import OfficialReport
from memarch.benchmarks.metrics.registry import CONTEXT_METRICS
from memarch.benchmarks.metrics.retrieval import (RANKING_METRICS, RETRIEVAL_METRICS, SESSION_METRICS, gold_sessions,
                                                  ranked_sessions, ranked_turns, retrieval_scores,
                                                  retrieval_scores_many)
from memarch.benchmarks.metrics.scores import ABSTAIN, qa_f1
from memarch.pipeline.trial import QueryOutcome


def metric_fallback(values: dict[str, Any], metric: str) -> str | None:
    """The score that stands in when a question has no value of ``metric`` (e.g. evidence recall
    of a question without gold evidence): the reader's QA F1 when there is one, else the answer span."""
    if values.get(metric) is not None:
        return None
    return "qa_f1" if values.get("qa_f1") is not None else "answer_span"


def metric_score(values: dict[str, Any], metric: str) -> float:
    """A question's score of ``metric`` from its named scores, with `metric_fallback`."""
    fallback = metric_fallback(values, metric)
    return float(values.get(metric) if fallback is None else (values.get(fallback) or 0.0))


@dataclass
class QuestionScorer:
    """Scores the questions of one stream the same way: how to read, what the score is, and what
    a failure is traced through.

    Example::

        scorer = QuestionScorer(program.store, top_k=20, context_budget=200, metric="answer_span",
                                threshold=0.5, trace=trace, view=StoreView())
        outcome = scorer.ask(program.read, "conv-26", question, query, per_query)

    Args:
        store: the memory read (None: the no-memory agent); attribution looks into it.
        top_k, context_budget: what each read asks for.
        metric: the metric a question's score is (`metric_score`).
        threshold: a question whose score is below it is a failure (attributed).
        trace, view: the write trace and store view that attribution reads.
        reader, judge: the LM reader (adds ``qa_f1``, scores unanswerable questions) and judge.
        attribute_all: also record, for every answerable question, the stage `attribute` finds
            (``evidence["loss_stage"]``), whether it failed or not.
        rank_gold: an (untimed) read that, for a retrieve failure, locates the gold items in a
            deeper read (`gold_rank`).
        memo: where scores of a question's context and ranking are kept for another read that
            returns the same (a landscape's passes over identical memories): the scores are
            functions of the question, the context and the ranked sources only. None: not kept.
    """

    store: Any
    top_k: int
    context_budget: int | None
    metric: str
    threshold: float
    trace: WriteTrace
    view: StoreView
    reader: Any = None
    judge: Any = None
    attribute_all: bool = False
    rank_gold: Callable[..., Any] | None = None
    memo: dict | None = None

    def ask(self, read: Callable[..., Any] | None, namespace: str, q: Question, query: Any,
            per_query: dict[str, list[float]], pending: list | None = None,
            session_of: Mapping[str, str] | None = None, official: OfficialScoring | None = None
            ) -> QueryOutcome | None:
        """Read the memory for ``q``, score the context and attribute a failure; None for an
        unanswerable question without a reader. ``pending``: where the question's retrieval
        metrics wait for `score_retrieval` (one trec_eval call for a whole stream) unless they are the
        metric, which needs them now. ``session_of`` (turn id -> session id of the dialogue) adds the
        session-level metrics. ``official``: the benchmark's official report for this dialogue,
        which scores the read of every question, unanswerable ones included (its averages say
        which count)."""
        if not q.answerable and self.reader is None and official is None:
            return None  # unanswerable: scored only with an LM
        retrieval = read(query, top_k=self.top_k, context_budget=self.context_budget) if read is not None else None
        items = [s.item for s in retrieval.items] if retrieval is not None else []
        if official is not None:
            official.score(q, ranked_turns(items))
            if not q.answerable and self.reader is None:
                return None
        context = retrieval.context if retrieval is not None else ""
        values: dict[str, float | None] = self.context_scores(q, context, items)
        # hit@k / recall@k / ndcg@k / mrr over the gold evidence turns (trec_eval); none without evidence
        turns = ranked_turns(items)
        sessions = (gold_sessions(q.evidence, session_of), ranked_sessions(turns, session_of)) if session_of else None
        deferred = pending is not None and self.metric not in RANKING_METRICS
        ranked = None if deferred else retrieval_scores(q.evidence, turns)
        values.update(ranked or {})
        if sessions is not None and not deferred:
            values.update(retrieval_scores(*sessions, SESSION_METRICS) or {})
        prediction, reader_failed = self.answer_scores(q, context, values)
        for name, v in values.items():
            if v is not None:
                per_query[name].append(v)
        score = metric_score(values, self.metric)
        success = score >= self.threshold
        evidence = self._evidence(q, values, skipped=ranked is None and not deferred)
        if self.reader is not None:
            evidence["prediction"] = prediction
            if reader_failed:
                evidence["reader_failed"] = True
        attribution = self._attribute(q, query, namespace, items, success, evidence)
        if not q.answerable:
            evidence["abstention"] = True  # no gold answer: right iff the reader abstains
        outcome = QueryOutcome(query_id=q.id, score=float(score), success=success, category=q.category,
                               attribution=attribution, evidence=evidence, retrieved_ids=[it.id for it in items])
        if deferred:
            pending.append((outcome, list(q.evidence), turns, sessions))
        return outcome

    def context_scores(self, q: Question, context: str, items: list[Any]) -> dict[str, float | None]:
        """The registry's LM-free context metrics of an answerable question ({} otherwise)."""
        if not q.answerable:
            return {}
        sources = [s for it in items for s in it.source_ids]
        key = None if self.memo is None else ("context", q.id, context, tuple(sources))
        if key is not None and key in self.memo:
            return dict(self.memo[key])
        values = {name: score(q, context, sources, self.context_budget) for name, score in CONTEXT_METRICS.items()}
        if key is not None:
            self.memo[key] = dict(values)
        return values

    def answer_scores(self, q: Question, context: str, values: dict[str, float | None]) -> tuple[Any, bool]:
        """With a reader: its answer, scored by QA F1 (and the judge) into ``values``; returns
        (prediction, whether the reader's output was unusable)."""
        if self.reader is None:
            return None, False
        prediction = self.reader(context, q.text)
        if prediction is None:
            # The reader's answer was unusable: a failed query, never an abstention (which would
            # score 1.0 on an adversarial question).
            values["qa_f1"] = 0.0
            if self.judge is not None:
                values["judge"] = 0.0
            return None, True
        # No gold answer means the right answer is to abstain, whatever the category (a
        # LongMemEval ``_abs`` question keeps its type as category).
        values["qa_f1"] = qa_f1(prediction, q.answer or ABSTAIN, q.category if q.answer is not None else "adversarial")
        if self.judge is not None:
            verdict = self.judge(q.text, q.answer or ABSTAIN, prediction)
            values["judge"] = None if verdict is None else float(verdict)
        return prediction, False

    def _evidence(self, q: Question, values: dict[str, float | None], *, skipped: bool) -> dict[str, Any]:
        evidence: dict[str, Any] = {"question": q.text, "gold_answer": q.answer,
                                    **{k: v for k, v in values.items() if v is not None}}
        fallback = metric_fallback(values, self.metric)  # counted and shown, never silent
        if fallback is not None:
            evidence["metric_fallback"] = fallback
        if skipped:
            evidence["retrieval_skipped"] = True  # no gold evidence ids: no hit@k / ndcg@k / mrr
        return evidence

    def _attribute(self, q: Question, query: Any, namespace: str, items: list[Any], success: bool,
                   evidence: dict[str, Any]) -> str | None:
        """The module that lost a failed answerable question (its facts added to ``evidence``)."""
        if not q.answerable:
            return None
        attribution = None
        if not success:
            attribution, facts = attribute(q.evidence, self.trace, self.store, namespace, items, view=self.view)
            evidence.update(facts)
            if attribution == "retrieve" and self.rank_gold is not None:
                lost = [sid for sid, stage in facts["lost"].items() if stage == "retrieve"]
                texts = self.store.resources.texts if self.store is not None else None
                evidence.update(gold_rank(self.rank_gold, query, lost, self.top_k, len(items), texts))
        if self.attribute_all:
            evidence["loss_stage"] = attribution if not success else attribute(
                q.evidence, self.trace, self.store, namespace, items, view=self.view)[0]
        return attribution


@dataclass
class OfficialScoring:
    """A benchmark's official report applied to one dialogue's questions: each question's official
    metrics, appended to ``rows`` (the reader's list of ``(question, scores)``)."""

    report: OfficialReport
    corpus: Any
    rows: list

    def score(self, q: Question, turns: list[str]) -> None:
        self.rows.append((q, self.report.question_scores(q, self.corpus, turns)))


def score_retrieval(pending: list, per_query: dict[str, list[float]], memo: dict | None = None) -> None:
    """The retrieval metrics `QuestionScorer.ask` deferred, for every question of a stream in one
    trec_eval call per unit (turns; sessions: one evaluator for all of them, not one per question), added to each outcome's
    evidence and to ``per_query`` in question order, as ``ask`` would have. ``memo``: rankings
    scored before (a landscape's reused reads) are not scored again (trec_eval scores each question
    on its own: the same values)."""
    values = _scored({str(i): (gold, turns) for i, (_, gold, turns, _) in enumerate(pending)}, RETRIEVAL_METRICS, memo)
    by_session = _scored({str(i): sessions for i, (*_, sessions) in enumerate(pending) if sessions is not None},
                         SESSION_METRICS, memo)
    for i, (outcome, *_) in enumerate(pending):
        scored = values.get(str(i))
        if scored is None:
            outcome.evidence["retrieval_skipped"] = True  # no gold evidence ids
            continue
        scored = {**scored, **by_session.get(str(i), {})}
        outcome.evidence.update(scored)
        for name, v in scored.items():
            per_query[name].append(v)
    pending.clear()


def _scored(questions: dict[str, tuple], metrics: tuple[str, ...], memo: dict | None) -> dict[str, dict[str, float]]:
    """`retrieval_scores_many` of ``questions`` ({qid: (gold, ranked)}), through ``memo`` when given
    (keyed by the metrics, the gold and the ranking; a question without gold is kept as None)."""
    if memo is None:
        return retrieval_scores_many(questions, metrics)
    keys = {qid: ("ranking", metrics, tuple(gold), tuple(ranked)) for qid, (gold, ranked) in questions.items()}
    todo = {qid: questions[qid] for qid, key in keys.items() if key not in memo}
    fresh = retrieval_scores_many(todo, metrics) if todo else {}
    for qid in todo:
        got = fresh.get(qid)
        memo[keys[qid]] = None if got is None else tuple(got[m] for m in metrics)
    return {qid: dict(zip(metrics, memo[key])) for qid, key in keys.items() if memo[key] is not None}

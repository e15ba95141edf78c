"""The stream protocol of a conversation benchmark: one write pass of a program over each dialogue's
sessions, its questions asked at their read points by one or more readers, one `TrialResult`
per reader (`run_stream`)."""
from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable

from memarch.benchmarks.base import Benchmark
from memarch.benchmarks.evaluation.attribution import StoreView, WriteTrace
from memarch.benchmarks.evaluation.costs import read_costs
from memarch.benchmarks.evaluation.protocols import question_query, stream_schedule
from memarch.benchmarks.evaluation.question_scoring import OfficialScoring, QuestionScorer, score_retrieval
from memarch.benchmarks.evaluation.settings import EvaluationSettings
from memarch.benchmarks.evaluation.traced_program import TracedProgram
from memarch.benchmarks.metrics.official_report import OfficialReport
from memarch.benchmarks.metrics.registry import OFFICIAL_REPORTS
from memarch.benchmarks.metrics.retrieval import RANKING_METRICS
from memarch.benchmarks.metrics.scores import mean
from memarch.pipeline.collector import fewer_collections
from memarch.pipeline.program import MemoryProgram
from memarch.pipeline.trial import MODULES, QueryOutcome, TrialResult

Read = Callable[..., Any]
OnInstance = Callable[[int, int, list[float]], bool]
EMBED_BATCH = 512  # questions embedded per forward pass up front


@dataclass
class ReaderRun:
    """What one reader of a stream collects: its outcomes, per-metric values, timing, read
    latencies, the retrieval metrics still to score (one trec_eval call at the end), the official
    report's rows (``(question, its official metrics)``) and the unanswerable questions left
    unscored (no reader)."""

    read: Read | None
    outcomes: list[QueryOutcome] = field(default_factory=list)
    per_query: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    timing: Counter = field(default_factory=Counter)
    latency: list[float] = field(default_factory=list)
    pending: list = field(default_factory=list)
    official: list = field(default_factory=list)
    skipped: int = 0

    def timed_read(self) -> Read | None:
        """``read`` that appends each call's wall time (seconds) to ``latency``."""
        if self.read is None:
            return None
        read, latency = self.read, self.latency

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            out = read(*args, **kwargs)
            latency.append(time.perf_counter() - t0)
            return out

        return timed

    def result(self, bench: Benchmark, metric: str, threshold: float, memo: dict | None = None) -> TrialResult:
        score_retrieval(self.pending, self.per_query, memo)
        result = stream_result(bench, self.outcomes, self.per_query, self.timing, metric, threshold, self.latency)
        report = official_report(bench)
        if report is not None:
            result.metadata["official"] = report.summary(self.official)
            result.metadata["category_report"] = report.category_report(
                [(o.category, o.score, bool(o.evidence.get("abstention"))) for o in self.outcomes], self.skipped)
        return result


def official_report(bench: Benchmark) -> OfficialReport | None:
    """The official report ``bench`` declares (``official_report``), or None."""
    return None if bench.official_report is None else OFFICIAL_REPORTS[bench.official_report]


def run_stream(program: MemoryProgram | None, bench: Benchmark, settings: EvaluationSettings, *,
               readers: list[Read | None] | None = None, attribute_all: bool = False,
               on_read_point: Callable[[str, WriteTrace], None] | None = None,
               on_instance: OnInstance | None = None, score_memo: dict | None = None) -> list[TrialResult]:
    """One write pass of ``program`` over the stream of ``bench`` (a split view), read at every
    read point by each of ``readers`` (callables like ``program.read``; default: the program's
    own); one result per reader, scored by ``settings`` (its ``top_k`` must be resolved).

    Reads never change memory (retrievers and ``Store.search`` only look), so readers sharing one
    write pass get exactly what each would get alone. ``attribute_all`` also records, for every
    answerable question, the stage attribution finds (``evidence["loss_stage"]``);
    ``on_read_point(namespace, trace)`` runs after each write that questions follow. A retrieve
    failure of the program's own reader also records where its gold ranks in a deeper read
    (`gold_rank`); shared readers (landscapes) memoise reads per query and are not asked twice.
    ``on_instance(dialogues done, dialogues in total, that dialogue's question scores)`` (one
    reader) is called after each dialogue; returning True stops the stream there (a pruned trial).
    ``score_memo``: a dict where a question's scores are kept for a later read that returns the same
    context and ranking (`QuestionScorer.memo`; a landscape shares one across its passes).
    """
    # The deeper gold-rank read goes to the program directly, not through the timed reader: it is
    # diagnosis, not a read the memory's user makes, so it stays out of read_p50/p95.
    rank_gold = program.read if readers is None and program is not None else None
    trace = WriteTrace()
    runs = [ReaderRun(read) for read in (readers if readers is not None
                                         else [program.read if program is not None else None])]
    scorer = QuestionScorer(program.store if program is not None else None, top_k=settings.read_top_k,
                            context_budget=settings.context_budget, metric=settings.metric_name(),
                            threshold=settings.success_threshold, trace=trace, view=StoreView(),
                            reader=settings.reader, judge=settings.judge, attribute_all=attribute_all,
                            rank_gold=rank_gold, memo=score_memo)
    with fewer_collections():
        if program is not None and runs:
            _embed_questions(program, bench)
        done = _stream_dialogues(program, bench, runs, scorer, trace, on_read_point, on_instance)
        results = [run.result(bench, scorer.metric, scorer.threshold, scorer.memo) for run in runs]
    for r in results:
        r.metadata["instances"] = {"done": done, "total": len(bench.dialogues)}
    return results


def _embed_questions(program: MemoryProgram, bench: Benchmark) -> None:
    # All questions in a few large forward passes up front (a cold trial otherwise pays ~0.1 s per
    # small batch); embeddings are a pure function of the text, so this changes no score.
    texts = list(dict.fromkeys(q.text for d in bench.dialogues for q in d.questions))
    for i in range(0, len(texts), EMBED_BATCH):
        program.resources.embedder.embed(texts[i:i + EMBED_BATCH])


def _stream_dialogues(program: MemoryProgram | None, bench: Benchmark, runs: list[ReaderRun],
                      scorer: QuestionScorer, trace: WriteTrace,
                      on_read_point: Callable[[str, WriteTrace], None] | None,
                      on_instance: OnInstance | None) -> int:
    """Every dialogue in stream order (until ``on_instance`` stops it); returns how many were done."""
    total, done, mark = len(bench.dialogues), 0, 0
    reads = [run.timed_read() for run in runs]
    report = official_report(bench)
    for dialogue in bench.dialogues:
        if on_instance is not None and done:  # the previous dialogue is scored: stop here?
            if on_instance(done, total, [o.score for o in runs[0].outcomes[mark:]]):
                return done
            mark = len(runs[0].outcomes)
        done += 1
        session_of = {turn.id: session.id for session in dialogue.sessions for turn in session.turns}
        corpus = report.corpus(dialogue) if report is not None else None
        officials = [OfficialScoring(report, corpus, run.official) if report is not None else None for run in runs]
        for session, questions in stream_schedule(dialogue):
            write_s = _write(program, session, trace)
            if questions and on_read_point is not None:
                on_read_point(dialogue.namespace, trace)
            t0 = time.perf_counter()
            if program is not None and questions and runs:
                # One batched forward pass for the batch's queries instead of one per question;
                # retrievers then find them in the embedder's memo.
                program.resources.embedder.embed([q.text for q in questions])
            embed_s = time.perf_counter() - t0
            for run, read, official in zip(runs, reads, officials):
                run.timing["write_s"] += write_s
                t0 = time.perf_counter()
                for q in questions:
                    outcome = scorer.ask(read, dialogue.namespace, q, question_query(dialogue, q, session),
                                         run.per_query, pending=run.pending, session_of=session_of, official=official)
                    if outcome is not None:
                        run.outcomes.append(outcome)
                    else:
                        run.skipped += 1  # unanswerable without a reader
                run.timing["read_s"] += embed_s + time.perf_counter() - t0
    if on_instance is not None and done == total and total:
        on_instance(done, total, [o.score for o in runs[0].outcomes[mark:]])  # the last: reported, nothing to stop
    return done


def _write(program: MemoryProgram | None, session: Any, trace: WriteTrace) -> float:
    """Write one session through the traced program; its wall time in seconds."""
    t0 = time.perf_counter()
    if program is not None:
        with TracedProgram(program, trace) as traced:
            traced.write(session)
    return time.perf_counter() - t0


def stream_result(bench: Benchmark, outcomes: list[QueryOutcome], per_query: dict[str, list[float]],
                  timing: Counter, metric: str, threshold: float, latency: list[float]) -> TrialResult:
    """The `TrialResult` of one reader's outcomes over a stream."""
    by_cat: dict[str, list[float]] = defaultdict(list)
    for o in outcomes:
        by_cat[o.category].append(o.score)
    scores = {name: mean(vals) for name, vals in per_query.items()}
    scores["questions"] = float(len(outcomes))
    attribution = Counter(o.attribution for o in outcomes if o.attribution)
    fallbacks = sum(1 for o in outcomes if "metric_fallback" in o.evidence)
    if fallbacks:
        scores["metric_fallbacks"] = float(fallbacks)
    skipped = sum(1 for o in outcomes if o.evidence.get("retrieval_skipped"))
    scores["retrieval_skipped"] = float(skipped)  # questions without gold evidence: no hit@k etc.
    return TrialResult(
        architecture=None, benchmark=bench.name, split=bench.split_name,
        score=mean(o.score for o in outcomes), scores=scores,
        per_category={c: mean(v) for c, v in sorted(by_cat.items())},
        cost={**{k: round(v, 4) for k, v in timing.items()},
              **{k: v for k, v in read_costs(latency).items() if k != "read_s"}}, outcomes=outcomes,
        attribution={m: attribution.get(m, 0) for m in MODULES},
        metadata={"metric": metric, "protocol": "stream", "success_threshold": threshold,
                  # per category, the turn- and session-level retrieval metrics over the questions with evidence
                  "retrieval_per_category": _retrieval_per_category(outcomes)})


def _retrieval_per_category(outcomes: list[QueryOutcome]) -> dict[str, dict[str, float]]:
    ranked: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for o in outcomes:
        for m in RANKING_METRICS:
            if m in o.evidence:
                ranked[o.category][m].append(o.evidence[m])
    return {c: {m: mean(v) for m, v in ms.items()} for c, ms in sorted(ranked.items())}

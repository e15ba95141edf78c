"""The evaluation runtime: one architecture (or the no-memory baseline) on one benchmark split
-> a `TrialResult` with the objective, scores, per-category scores, cost, per-query outcomes and
failure attribution. A trial that raises is returned as ``failed=True``; the study goes on."""
from __future__ import annotations

import contextlib
import logging
import time
import traceback
from collections import Counter, defaultdict
from typing import Any, Callable

from memarch.benchmarks.evaluation.attribution import StoreView, WriteTrace, attribute
from memarch.benchmarks.base import Benchmark, TaskBenchmark
from memarch.benchmarks.metrics.retrieval import RETRIEVAL_METRICS
from memarch.benchmarks.metrics.scores import mean
from memarch.benchmarks.evaluation.protocols import collect_then_deploy, question_query, stream_schedule
from memarch.pipeline.architecture import Architecture
from memarch.benchmarks.evaluation.costs import lm_tokens, memory_costs, read_costs
from memarch.pipeline.episodes import Episode
from memarch.benchmarks.evaluation.fallbacks import read_counters, trial_delta
from memarch.benchmarks.agents.memory_skill import skill_costs
from memarch.benchmarks.metrics.registry import METRICS, check_metric, default_metric  # noqa: F401
from memarch.pipeline.program import MemoryProgram
from memarch.benchmarks.evaluation.question_scoring import ask, score_retrieval
from memarch.pipeline.resources import Resources
from memarch.benchmarks.evaluation.traced_program import TracedProgram
from memarch.pipeline.trial import QueryOutcome, TrialResult

log = logging.getLogger(__name__)


def default_top_k(budget_tokens: int | None) -> int:
    """Items per read when none is given: enough to fill the budget (B / 10, at least 4)."""
    return max(4, (budget_tokens or 200) // 10)


def _accounting(resources: Resources, accounting: Any):
    if accounting is not None:
        return accounting
    roles = resources.extra.get("lm_roles")
    return getattr(roles, "accounting", None)


def _build_program(arch_or_program: Any, resources: Resources, top_k: int, budget: int | None,
                   config: dict | None) -> MemoryProgram | None:
    if arch_or_program is None:
        return None
    if isinstance(arch_or_program, MemoryProgram):
        return arch_or_program
    arch = arch_or_program if isinstance(arch_or_program, Architecture) else Architecture.from_dict(arch_or_program)
    return MemoryProgram(arch, resources=resources, top_k=top_k, budget_tokens=budget, config=config)


def evaluate(architecture_or_program: Architecture | MemoryProgram | dict | None, benchmark: Benchmark | str, *,
             split: str = "search", resources: Resources | None = None, budget_tokens: int | None = 200,
             top_k: int | None = None, limit: int | None = None, reader: Any = None, judge: Any = None,
             objective: str | None = None, success_threshold: float = 0.5, config: dict | None = None,
             accounting: Any = None, on_instance: Callable[[int, int, list[float]], bool] | None = None) -> TrialResult:
    """Evaluate one architecture on one split of a benchmark.

    Example::

        arch = Architecture(("turn",), "vector", "hybrid", "lightweight")
        result = evaluate(arch, "generated", split="search")
        result.objective, result.per_category, result.attribution

    Args:
        architecture_or_program: an `Architecture` (a fresh `MemoryProgram` is built for the
            trial), a built program (used as is), or None for the no-memory baseline.
        benchmark: a `Benchmark` or a name for :func:`memarch.benchmarks.get_benchmark`.
        split: ``search`` / ``validation`` / ``test`` (disjoint) or ``all``.
        budget_tokens: context budget B in words (ANCHORS 6 uses 200).
        top_k: items per read; None = enough to fill the budget (B / 10, at least 4). An
            architecture that sets the ``retrieve.top_k`` knob reads with that instead.
        limit: the first N questions (or tasks) of the split.
        reader: a callable ``(context, question) -> answer`` (e.g. `MemoryReader`): adds ``qa_f1``
            and scores unanswerable questions.
        judge: a callable ``(question, gold, answer) -> bool | None`` (e.g. `AnswerJudge`).
        objective: which score is the objective for conversations (one of `METRICS`; default
            ``answer_span`` without a reader, ``qa_f1`` with one); agent benchmarks always use
            their task score. An LM objective without a reader raises ValueError up front.
        success_threshold: a query whose score is below it is a failure (attributed).
        on_instance: for a conversation benchmark, called after each dialogue of the split (in
            stream order) with (dialogues done, dialogues in the split, that dialogue's question
            scores); returning True stops the evaluation there: the result holds the outcomes so
            far and ``metadata["instances"]`` says how many dialogues it saw (a pruned trial).
    """
    resources = resources or Resources()
    requested = objective
    objective = check_metric(objective, reader, judge)  # a bad name is the caller's error, not a failed trial
    if top_k is None:
        top_k = default_top_k(budget_tokens)
    arch = architecture_or_program.architecture if isinstance(architecture_or_program, MemoryProgram) \
        else (None if isinstance(architecture_or_program, dict) else architecture_or_program)
    bench_name = benchmark if isinstance(benchmark, str) else getattr(benchmark, "name", "?")
    acct = _accounting(resources, accounting)
    before = acct.snapshot() if acct is not None else None
    embedded_before = getattr(resources.embedder, "computed", 0)
    requested_before = getattr(resources.embedder, "requested", 0)
    started = time.perf_counter()
    lm_users = [("reader", reader), ("judge", judge)]
    program, counted = None, None
    try:
        if isinstance(benchmark, str):
            from memarch.benchmarks import get_benchmark

            benchmark = get_benchmark(benchmark)
        view = benchmark.split(split).limit(limit)
        program = _build_program(architecture_or_program, resources, top_k, budget_tokens, config)
        arch = program.architecture if program is not None else arch
        if program is not None and "retrieve.top_k" in program.architecture.param_dict:
            top_k = program.top_k  # the architecture's knob, not the evaluation's default
        counted = read_counters(program, lm_users)  # a program passed in may have counted before
        if isinstance(view, TaskBenchmark):
            if requested not in (None, default_metric(reader)):
                log.warning("objective %s ignored: %s is an agent benchmark scored by its task score",
                            requested, bench_name)
            result = _run_tasks(program, view, top_k, budget_tokens, success_threshold)
        else:
            result = _run_stream(program, view, top_k, budget_tokens, reader, judge, objective,
                                 success_threshold, on_instance=on_instance)[0]
        result.architecture = arch
        result.split = split
        if program is not None:
            memory, per_ns = memory_costs(program.store)
            result.cost.update(memory)
            result.metadata["memory_per_namespace"] = per_ns
            if program.manager.memory_budget is not None:  # what keeping it cost, counted
                result.metadata["memory_budget"] = {"tokens": program.manager.memory_budget,
                                                    **program.manager.budget_stats}
    except Exception as exc:  # a trial fails, not the study
        from memarch.lm.roles import as_unavailable

        exc = as_unavailable(exc) or exc  # a dead endpoint in any LM path: one LMUnavailableError line
        log.warning("trial %s on %s failed: %s", arch, bench_name, exc)
        named = "task_score" if isinstance(benchmark, TaskBenchmark) else objective
        result = TrialResult(architecture=arch, benchmark=bench_name, split=split, objective=0.0,
                             failed=True, error=f"{exc.__class__.__name__}: {exc}",
                             metadata={"traceback": traceback.format_exc(limit=8), "objective": named})
    if counted is not None:
        _add_fallbacks(result, *trial_delta(read_counters(program, lm_users), counted))
    result.cost["wall_s"] = round(time.perf_counter() - started, 4)
    result.cost["embeddings_computed"] = float(getattr(resources.embedder, "computed", 0) - embedded_before)
    result.cost["embeddings_requested"] = float(getattr(resources.embedder, "requested", 0) - requested_before)
    if acct is not None:
        result.cost.update(acct.delta(before).to_metrics())
    result.cost["lm_tokens"] = lm_tokens(result.cost)
    result.metadata.setdefault("budget_tokens", budget_tokens)
    result.metadata.setdefault("top_k", top_k)
    return result


def _add_fallbacks(result: TrialResult, requests: dict[str, int], fallbacks: dict[str, int]) -> None:
    """The modules' LM counts over the trial, added to what the run itself reported (the DSPy agent
    of a task benchmark lives per episode and reports through the episodes)."""
    for role, n in requests.items():
        result.lm_requests[role] = result.lm_requests.get(role, 0) + n
        result.fallbacks[role] = result.fallbacks.get(role, 0) + fallbacks.get(role, 0)


def _run_stream(program: MemoryProgram | None, bench: Benchmark, top_k: int, budget: int | None,
                reader: Any, judge: Any, objective: str, threshold: float, *,
                readers: list[Callable[..., Any] | None] | None = None, attribute_all: bool = False,
                on_read_point: Callable[[str, WriteTrace], None] | None = None,
                on_instance: Callable[[int, int, list[float]], bool] | None = None) -> list[TrialResult]:
    """One write pass of ``program`` over the stream, read at every read point by each of
    ``readers`` (callables like ``program.read``; default: the program's own); one result per reader.

    Reads never change memory (retrievers and ``Store.search`` only look), so readers sharing one
    write pass get exactly what each would get alone. ``attribute_all`` also records, for every
    answerable question, the stage ``attribute`` finds (``evidence["loss_stage"]``) whether it
    failed or not; ``on_read_point(namespace, trace)`` runs after each write that questions follow.
    A retrieve failure of the program's own reader also records where its gold ranks in a deeper
    read (`gold_rank`); shared readers (landscapes) memoise reads per query and are not asked twice.
    ``on_instance`` (one reader): see `evaluate`; the stream stops after a dialogue where it returns True.
    """
    # The deeper gold-rank read goes to the program directly, not through the timed reader: it is
    # diagnosis, not a read the memory's user makes, so it stays out of read_p50/p95.
    rank_gold = program.read if readers is None and program is not None else None
    trace = WriteTrace()
    view = StoreView()
    if readers is None:
        readers = [program.read if program is not None else None]
    store = program.store if program is not None else None
    latency: list[list[float]] = [[] for _ in readers]
    readers = [_timed(read, lat) for read, lat in zip(readers, latency)]
    outcomes: list[list[QueryOutcome]] = [[] for _ in readers]
    per_query: list[dict[str, list[float]]] = [defaultdict(list) for _ in readers]
    timing = [Counter() for _ in readers]
    pending: list[list] = [[] for _ in readers]  # retrieval metrics scored at the end, in one ranx call
    if program is not None and readers:
        # All questions in a few large forward passes up front (a cold trial otherwise pays ~0.1 s
        # per small batch); embeddings are a pure function of the text, so this changes no score.
        texts = list(dict.fromkeys(q.text for d in bench.dialogues for q in d.questions))
        for i in range(0, len(texts), 512):
            program.resources.embedder.embed(texts[i:i + 512])
    total, done, mark = len(bench.dialogues), 0, 0
    for dialogue in bench.dialogues:
        if on_instance is not None and done:  # the previous dialogue is scored: stop here?
            if on_instance(done, total, [o.score for o in outcomes[0][mark:]]):
                break
            mark = len(outcomes[0])
        done += 1
        for session, questions in stream_schedule(dialogue):
            t0 = time.perf_counter()
            if program is not None:
                with TracedProgram(program, trace) as traced:
                    traced.write(session)
            write_s = time.perf_counter() - t0
            if questions and on_read_point is not None:
                on_read_point(dialogue.namespace, trace)
            t0 = time.perf_counter()
            if program is not None and questions and readers:
                # One batched forward pass for the batch's queries instead of one per question;
                # retrievers then find them in the embedder's memo.
                program.resources.embedder.embed([q.text for q in questions])
            embed_s = time.perf_counter() - t0
            for read, outs, values, times, waiting in zip(readers, outcomes, per_query, timing, pending):
                times["write_s"] += write_s
                t0 = time.perf_counter()
                for q in questions:
                    outcome = ask(read, store, dialogue.namespace, q, question_query(dialogue, q, session), top_k,
                                   budget, reader, judge, objective, threshold, trace, view, values, attribute_all,
                                   rank_gold, pending=waiting)
                    if outcome is not None:
                        outs.append(outcome)
                times["read_s"] += embed_s + time.perf_counter() - t0
    if on_instance is not None and done == total and total:
        on_instance(done, total, [o.score for o in outcomes[0][mark:]])  # the last one: reported, nothing to stop
    for waiting, values in zip(pending, per_query):
        score_retrieval(waiting, values)
    results = [_stream_result(bench, outs, values, times, objective, threshold, lat)
               for outs, values, times, lat in zip(outcomes, per_query, timing, latency)]
    for r in results:
        r.metadata["instances"] = {"done": done, "total": total}
    return results


def _timed(read: Callable[..., Any] | None, latency: list[float]) -> Callable[..., Any] | None:
    """``read`` that appends each call's wall time (seconds) to ``latency``."""
    if read is None:
        return None

    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        out = read(*args, **kwargs)
        latency.append(time.perf_counter() - t0)
        return out

    return timed


def _stream_result(bench: Benchmark, outcomes: list[QueryOutcome], per_query: dict[str, list[float]],
                   timing: Counter, objective: str, threshold: float, latency: list[float]) -> TrialResult:
    by_cat: dict[str, list[float]] = defaultdict(list)
    for o in outcomes:
        by_cat[o.category].append(o.score)
    scores = {name: mean(vals) for name, vals in per_query.items()}
    scores["questions"] = float(len(outcomes))
    attribution = Counter(o.attribution for o in outcomes if o.attribution)
    fallbacks = sum(1 for o in outcomes if "objective_fallback" in o.evidence)
    if fallbacks:
        scores["objective_fallbacks"] = float(fallbacks)
    skipped = sum(1 for o in outcomes if o.evidence.get("retrieval_skipped"))
    scores["retrieval_skipped"] = float(skipped)  # questions without gold evidence: no hit@k etc.
    ranked_by_cat: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for o in outcomes:
        for m in RETRIEVAL_METRICS:
            if m in o.evidence:
                ranked_by_cat[o.category][m].append(o.evidence[m])
    return TrialResult(
        architecture=None, benchmark=bench.name, split=bench.split_name,
        objective=mean(o.score for o in outcomes), scores=scores,
        per_category={c: mean(v) for c, v in sorted(by_cat.items())},
        cost={**{k: round(v, 4) for k, v in timing.items()},
              **{k: v for k, v in read_costs(latency).items() if k != "read_s"}}, outcomes=outcomes,
        attribution={m: attribution.get(m, 0) for m in ("encode", "manage", "store", "retrieve")},
        metadata={"objective": objective, "protocol": "stream", "success_threshold": threshold,
                  # per category, the turn-level retrieval metrics over the questions with evidence
                  "retrieval_per_category": {c: {m: mean(v) for m, v in ms.items()}
                                             for c, ms in sorted(ranked_by_cat.items())}})


def _run_tasks(program: MemoryProgram | None, bench: TaskBenchmark, top_k: int, budget: int | None,
               threshold: float) -> TrialResult:
    trace = WriteTrace()
    view = StoreView()
    outcomes: list[QueryOutcome] = []
    successes: list[float] = []
    steps: list[float] = []
    agent = Counter()  # the DSPy agent's LM answers and fallbacks, reported by each episode it played

    behaviour = Counter()  # memory actions and moves of the agent-played episodes (memory_skill.py)

    def count_agent(episode: Episode) -> None:
        agent.update({k: episode.metadata.get(f"agent_{k}", 0) for k in ("lm_requests", "fallbacks")})
        behaviour.update({k: episode.metadata[k] for k in ("stuck_moves", "back_and_forth_moves")
                          if k in episode.metadata})
        behaviour.update(episode.metadata.get("memory_skill", {}))

    if hasattr(bench, "use_note_store"):  # the agent keeps notes in a files store (memory as a skill)
        bench.use_note_store(program.store if program is not None else None)

    with contextlib.ExitStack() as stack:
        traced = stack.enter_context(TracedProgram(program, trace)) if program is not None else None
        for dep in collect_then_deploy(traced, bench, top_k=top_k, budget_tokens=budget,
                                       on_collect=lambda task, episode: count_agent(episode)):
            success = dep.score >= threshold
            successes.append(1.0 if dep.episode.outcome == "success" else 0.0)
            steps.append(float(len(dep.episode.steps)))
            count_agent(dep.episode)
            items = [s.item for s in dep.retrieval.items] if dep.retrieval is not None else []
            if program is not None and bench.mode == "dynamic" and dep.retrieval is not None:
                program.feedback(dep.retrieval, success)  # the environment's verdict, not gold labels
            attribution, facts = None, {}
            gold = bench.gold_sources(dep.task)
            if not success and gold:
                attribution, facts = attribute(gold, trace, program.store if program else None,
                                               dep.task.namespace, items, view=view)
            outcomes.append(QueryOutcome(query_id=dep.task.id, score=float(dep.score), success=success,
                                         category=str(dep.task.metadata.get("category", "")),
                                         attribution=attribution, evidence={"task": dep.task.text, **facts},
                                         retrieved_ids=[it.id for it in items]))
    by_cat: dict[str, list[float]] = defaultdict(list)
    for o in outcomes:
        by_cat[o.category].append(o.score)
    attribution = Counter(o.attribution for o in outcomes if o.attribution)
    cost = {"write_s": round(traced.write_s, 4), **read_costs(traced.latency)} if traced is not None else {}
    # The objective is the benchmark's task score (for TextWorldExpress: 1 for a success, else half
    # the game's partial score), a finer search signal than the success rate reported beside it.
    objective = mean(o.score for o in outcomes) if outcomes else 0.0
    cost.update(skill_costs(behaviour))
    return TrialResult(
        architecture=None, benchmark=bench.name, split=bench.split_name, objective=objective,
        scores={"task_score": objective, "success_rate": mean(successes) if successes else 0.0,
                "steps": mean(steps) if steps else 0.0, "tasks": float(len(outcomes))},
        per_category={c: mean(v) for c, v in sorted(by_cat.items())}, outcomes=outcomes, cost=cost,
        attribution={m: attribution.get(m, 0) for m in ("encode", "manage", "store", "retrieve")},
        metadata={"objective": "task_score", "protocol": f"collect_deploy:{bench.mode}",
                  "success_threshold": threshold,
                  **({"memory_skill": dict(behaviour)} if behaviour else {})},
        lm_requests={"agent": agent["lm_requests"]} if agent["lm_requests"] else {},
        fallbacks={"agent": agent["fallbacks"]} if agent["lm_requests"] else {})

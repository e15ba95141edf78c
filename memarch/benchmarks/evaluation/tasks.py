"""The collect-then-deploy protocol of an agent benchmark: the agent plays the collection tasks (their
episodes written to memory), then the deployment tasks with memory (static: frozen; dynamic: updated
while deployed), scored by the benchmark's task score (`run_tasks`)."""
from __future__ import annotations

import contextlib
from collections import Counter, defaultdict

from memarch.benchmarks.agents.memory_skill import skill_costs
from memarch.benchmarks.base import TaskBenchmark
from memarch.benchmarks.evaluation.attribution import StoreView, WriteTrace, attribute
from memarch.benchmarks.evaluation.costs import read_costs
from memarch.benchmarks.evaluation.protocols import collect_then_deploy
from memarch.benchmarks.evaluation.traced_program import TracedProgram
from memarch.benchmarks.metrics.scores import mean
from memarch.pipeline.collector import fewer_collections
from memarch.pipeline.episodes import Episode
from memarch.pipeline.program import MemoryProgram
from memarch.pipeline.trial import MODULES, QueryOutcome, TrialResult


def run_tasks(program: MemoryProgram | None, bench: TaskBenchmark, top_k: int, budget: int | None,
              threshold: float) -> TrialResult:
    """The deployment tasks' outcomes of ``program`` (None: the no-memory agent) on a split view of
    an agent benchmark, reading ``top_k`` items within ``budget`` words; a failed task with gold
    sources is attributed to the module that lost them."""
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

    if bench.uses_note_store:  # the agent keeps notes in a files store (memory as a skill)
        bench.use_note_store(program.store if program is not None else None)

    with contextlib.ExitStack() as stack:
        stack.enter_context(fewer_collections())
        traced = stack.enter_context(TracedProgram(program, trace)) if program is not None else None
        for dep in collect_then_deploy(traced, bench, top_k=top_k, context_budget=budget,
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
    # The score is the benchmark's task score (for TextWorldExpress: 1 for a success, else half
    # the game's partial score), a finer search signal than the success rate reported beside it.
    score = mean(o.score for o in outcomes) if outcomes else 0.0
    cost.update(skill_costs(behaviour))
    return TrialResult(
        architecture=None, benchmark=bench.name, split=bench.split_name, score=score,
        scores={"task_score": score, "success_rate": mean(successes) if successes else 0.0,
                "steps": mean(steps) if steps else 0.0, "tasks": float(len(outcomes))},
        per_category={c: mean(v) for c, v in sorted(by_cat.items())}, outcomes=outcomes, cost=cost,
        attribution={m: attribution.get(m, 0) for m in MODULES},
        metadata={"metric": "task_score", "protocol": f"collect_deploy:{bench.mode}",
                  "success_threshold": threshold,
                  **({"memory_skill": dict(behaviour)} if behaviour else {})},
        lm_requests={"agent": agent["lm_requests"]} if agent["lm_requests"] else {},
        fallbacks={"agent": agent["fallbacks"]} if agent["lm_requests"] else {})

"""The two evaluation protocols: ``stream`` (write sessions in time order, ask each question once
its evidence is written, as in LoCoMo) and ``collect -> deploy`` for agent tasks (collect with no
memory read, then deploy with memory; static: frozen while deployed, dynamic: keeps updating)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator

from memarch.benchmarks.base import AgentTask, Dialogue, Question, TaskBenchmark
from memarch.pipeline.episodes import Episode, Query

if TYPE_CHECKING:
    from memarch.pipeline.program import MemoryProgram
    from memarch.pipeline.retrieval import Retrieval


def ask_point(dialogue: Dialogue, question: Question, turn_session: dict[str, int]) -> int:
    """Index of the session after which ``question`` is asked: its own ``ask_after``, else the
    session that completes its evidence, else (no usable evidence) the end of the dialogue."""
    if question.ask_after is not None:
        return max(0, min(question.ask_after, len(dialogue.sessions) - 1))
    found = [turn_session[e] for e in question.evidence if e in turn_session]
    return max(found) if found else len(dialogue.sessions) - 1


def stream_schedule(dialogue: Dialogue) -> list[tuple[Episode, list[Question]]]:
    """``[(session, questions asked right after writing it), ...]`` in time order, up to the
    session of the last question.

    Questions are batched per session so that a retriever rebuilds its index once per session,
    not once per question (the fast-trial requirement).
    """
    turn_session = {t.id: i for i, s in enumerate(dialogue.sessions) for t in s.turns}
    batches: list[list[Question]] = [[] for _ in dialogue.sessions]
    for q in dialogue.questions:
        if batches:
            batches[ask_point(dialogue, q, turn_session)].append(q)
    # Sessions after the last question cannot change any answer: skip writing them.
    last = max((i for i, b in enumerate(batches) if b), default=-1)
    return list(zip(dialogue.sessions, batches))[: last + 1]


def question_query(dialogue: Dialogue, question: Question, session: Episode) -> Query:
    return Query(text=question.text, id=question.id, namespace=dialogue.namespace,
                 time=question.time or session.time, metadata={"category": question.category})


@dataclass
class Deployment:
    """One deployed task: what memory returned, the trajectory, its score."""

    task: AgentTask
    retrieval: "Retrieval | None"
    episode: Episode
    score: float


def collect_then_deploy(program: "MemoryProgram | None", bench: TaskBenchmark, *,
                        top_k: int | None = None, context_budget: int | None = None,
                        on_collect: Callable[[AgentTask, Episode], None] | None = None
                        ) -> Iterator[Deployment]:
    """Run the collection phase (agent without memory; trajectories written), then yield one
    `Deployment` per deployment task. In ``dynamic`` mode each deployed trajectory is written
    too; in ``static`` mode memory is frozen. ``program=None`` is the no-memory baseline.

    The query's ``episode_id`` is the task's own id, so a task never retrieves its own memories.
    """
    collect, deploy = bench.phases()
    for task in collect:
        episode = bench.attempt(task, None)
        if program is not None:
            program.write(episode)
        if on_collect is not None:
            on_collect(task, episode)
    for task in deploy:
        retrieval = None
        context = None
        if program is not None:
            retrieval = program.read(Query(text=task.text, id=task.id, episode_id=task.id,
                                           namespace=task.namespace), top_k=top_k, context_budget=context_budget)
            context = retrieval.context
        episode = bench.attempt(task, context, retrieval=retrieval)
        if program is not None and bench.mode == "dynamic":
            program.write(episode)
        yield Deployment(task, retrieval, episode, bench.score(task, episode))

"""Records of the memarch data format (docs/data.md) to and from the benchmark objects: a
``dialogue`` record is a `Dialogue`, a ``task`` record an `AgentTask` with its recorded `Episode`.
Both directions are lossless for what a benchmark uses, so a converted benchmark scores the same."""
from __future__ import annotations

import json
import os
from typing import Any, Iterable, Iterator

from memarch.benchmarks.base import COLLECT_DEPLOY, AgentTask, Benchmark, Dialogue, Question
from memarch.benchmarks.formats.jsonl_check import FORMAT
from memarch.pipeline.episodes import Episode, Step, Turn
from memarch.pipeline.files import atomic_write_text


def _session_day(time: str | None) -> str | None:
    return time[:10] if time else None


def _with_metadata(out: dict, metadata: dict) -> dict:
    if metadata:
        out["metadata"] = metadata
    return out


# -- dialogues -----------------------------------------------------------------------------------
def dialogue_record(d: Dialogue) -> dict:
    """The ``dialogue`` record of ``d`` (defaults left out: a turn's date when it is its session's day)."""
    by_index = {i: s.id for i, s in enumerate(d.sessions)}
    sessions = []
    for s in d.sessions:
        turns = []
        for t in s.turns:
            turn = {"id": t.id, "speaker": t.speaker, "text": t.text}
            if t.date != _session_day(s.time):
                turn["date"] = t.date
            turns.append(_with_metadata(turn, t.metadata))
        session = {"id": s.id, **({"time": s.time} if s.time is not None else {}), "turns": turns}
        sessions.append(_with_metadata(session, s.metadata))
    questions = []
    for q in d.questions:
        rec: dict[str, Any] = {"id": q.id, "question": q.text, "answer": q.answer, "evidence": list(q.evidence),
                               "category": q.category}
        if q.time is not None:
            rec["time"] = q.time
        if q.ask_after is not None:  # a session id reads better than an index; -1 has no id
            rec["ask_after"] = by_index.get(q.ask_after, q.ask_after)
        questions.append(_with_metadata(rec, q.metadata))
    return _with_metadata({"type": "dialogue", "id": d.namespace, "sessions": sessions, "questions": questions},
                          d.metadata)


def dialogue_from_record(r: dict) -> Dialogue:
    """The `Dialogue` of a checked ``dialogue`` record."""
    ns = r["id"]
    sessions = []
    for s in r["sessions"]:
        day = _session_day(s.get("time"))
        turns = [Turn(id=t["id"], speaker=t["speaker"], text=t["text"], date=t.get("date", day),
                      metadata=dict(t.get("metadata", {}))) for t in s["turns"]]
        sessions.append(Episode(id=s["id"], turns=turns, time=s.get("time"), namespace=ns,
                                metadata=dict(s.get("metadata", {}))))
    index = {s.id: i for i, s in enumerate(sessions)}
    questions = []
    for q in r["questions"]:
        answer = q["answer"]
        after = q.get("ask_after")
        questions.append(Question(
            id=q["id"], text=q["question"], answer=", ".join(answer) if isinstance(answer, list) else answer,
            evidence=list(q.get("evidence", [])), category=q.get("category", ""), time=q.get("time"),
            ask_after=index[after] if isinstance(after, str) else after, metadata=dict(q.get("metadata", {}))))
    return Dialogue(namespace=ns, sessions=sessions, questions=questions, metadata=dict(r.get("metadata", {})))


# -- agent tasks ---------------------------------------------------------------------------------
def task_record(task: AgentTask, episode: Episode, relevant: list[str] | None = None) -> dict:
    """The ``task`` record of ``task`` played as ``episode``."""
    rec: dict[str, Any] = {"type": "task", "id": task.id, "task": task.text}
    if task.namespace != "default":
        rec["namespace"] = task.namespace
    category = task.metadata.get("category")
    if category:
        rec["category"] = str(category)
    rec["steps"] = [_with_metadata({"id": s.id, "action": s.action, "observation": s.observation}, s.metadata)
                    for s in episode.steps]
    rec["outcome"] = episode.outcome
    if relevant is not None:
        rec["relevant"] = list(relevant)
    if episode.time is not None:
        rec["time"] = episode.time
    return _with_metadata(rec, {k: v for k, v in task.metadata.items() if k != "category"})


def task_from_record(r: dict) -> tuple[AgentTask, Episode]:
    """(the task, its recorded trajectory) of a checked ``task`` record."""
    ns = r.get("namespace", "default")
    meta = dict(r.get("metadata", {}))
    if r.get("category"):
        meta["category"] = r["category"]
    task = AgentTask(id=r["id"], text=r["task"], namespace=ns, metadata=meta)
    steps = [Step(id=s.get("id", f"s{i}"), action=s["action"], observation=s.get("observation", ""),
                  metadata=dict(s.get("metadata", {}))) for i, s in enumerate(r["steps"], 1)]
    episode = Episode(id=r["id"], task=r["task"], steps=steps, outcome=r["outcome"], time=r.get("time"),
                      namespace=ns, metadata=dict(r.get("metadata", {})))
    return task, episode


# -- whole files ---------------------------------------------------------------------------------
def meta_record(source: str, categories: Iterable[str] = ()) -> dict:
    rec: dict[str, Any] = {"type": "meta", "format": FORMAT, "source": source}
    categories = list(dict.fromkeys(categories))
    if categories:
        rec["categories"] = categories
    return rec


def benchmark_records(bench: Benchmark) -> Iterator[dict]:
    """The records of a benchmark's whole data (every split): a ``meta`` header, then one record
    per dialogue, or per task with its recorded trajectory (benchmarks that keep one, such as
    ``jsonl``'s own tasks)."""
    yield meta_record(bench.name, bench.categories or ())
    if bench.protocol == COLLECT_DEPLOY:
        if bench.recorded is None:
            from memarch.errors import DataError

            raise DataError(f"{bench.name}: an agent benchmark played live has no recorded trajectories to "
                            "convert (record its episodes as task lines: docs/data.md)")
        for task in bench.tasks:
            yield task_record(task, bench.recorded[task.id], bench.relevant.get(task.id))
        return
    for d in bench.dialogues:
        yield dialogue_record(d)


def write_records(path: str | os.PathLike, records: Iterable[dict]) -> int:
    """Write ``records`` one per line (atomically); returns the number of lines."""
    lines = [json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in records]
    atomic_write_text(path, "\n".join(lines) + "\n")
    return len(lines)

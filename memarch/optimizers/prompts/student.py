"""The compiled program as a DSPy student for prompt optimisation: a `dspy.Module` whose
predictors are the program's LM predictors (encoders, store, retriever, manager) and the reader's,
and whose ``forward(question_id, question)`` answers one benchmark question through the memory,
under the stream protocol of `memarch.benchmarks.evaluation.evaluate`, scored and attributed as it scores."""
from __future__ import annotations

import copy
import hashlib
import json
from collections import OrderedDict, defaultdict
from typing import Any

import dspy

from memarch.benchmarks.evaluation.attribution import StoreView, WriteTrace
from memarch.benchmarks.evaluation.protocols import question_query, stream_schedule
from memarch.benchmarks.evaluation.reader import MemoryReader
from memarch.benchmarks.evaluation.traced_program import TracedProgram
from memarch.pipeline.program import MemoryProgram
from memarch.pipeline.prompt_state import copy_prompt
from memarch.benchmarks.evaluation.question_scoring import QuestionScorer

READER = "reader.answer"
READ_ROLES = ("retriever", "reader")  # their prompts act at read time: memory does not depend on them
MEMORY_CACHE = 4  # written memories kept (one per conversation and write-side prompt state)


def program_predictors(program: MemoryProgram) -> list[tuple[str, dspy.Predict]]:
    """``("<role>.<predictor>", predictor)`` for every LM predictor of ``program``'s modules."""
    return [(f"{role}.{name}", p) for role, mod in program._modules() for name, p in mod.named_predictors()]


def optimisable(program: MemoryProgram, reader: MemoryReader | None) -> list[tuple[str, dspy.Predict]]:
    """The predictors that are called: the program's only when it has an LM (without one every
    module runs its LM-free path), then the reader's."""
    found = program_predictors(program) if program.resources.lm is not None else []
    return found + ([(READER, reader.answer)] if reader is not None else [])


class _Memory:
    """One conversation's memory as written so far with one write-side prompt state."""

    def __init__(self, program: MemoryProgram):
        self.program, self.trace, self.view = program, WriteTrace(), StoreView()
        self.written = 0  # sessions of the stream schedule written


class StudentRuntime:
    """What every copy of a `PromptStudent` shares (the optimisers deep-copy the student many
    times): the data, the written memories, the program template and the reader.

    Example::

        runtime = StudentRuntime(program, evaluator, ["search"], reader=MemoryReader(resources))
        student = PromptStudent(runtime)
        student(question_id="gen-1/q1", question="What is Yusuf's job?").answer

    Args:
        template: the compiled program (its architecture, settings and current prompts).
        evaluator: the `BenchmarkEvaluator` whose benchmark, limit, metric and judge score a question.
        splits: the benchmark splits whose questions may be asked.
        reader: the `MemoryReader` (None: the metric scores the context, e.g. answer_span).
    """

    def __init__(self, template: MemoryProgram, evaluator: Any, splits: list[str], reader: MemoryReader | None):
        from memarch.benchmarks.evaluation.settings import EvaluationSettings, default_top_k
        from memarch.benchmarks.metrics.registry import check_metric

        settings = evaluator.settings or EvaluationSettings()
        self.template = template
        self.reader = reader
        self.judge = settings.judge
        self.metric = check_metric(settings.metric, reader, self.judge)
        self.threshold = float(settings.success_threshold)
        self.budget = template.context_budget
        self.top_k = template.top_k or default_top_k(self.budget)
        self.questions: dict[str, tuple[Any, int, Any, Any]] = {}  # id -> (dialogue, schedule index, q, session)
        self.turns: dict[tuple[str, str], str] = {}  # (namespace, turn id) -> text: the missed evidence
        self.order: dict[str, list[str]] = {}  # split -> question ids in stream order
        for split in splits:
            view = evaluator.benchmark.split(split).limit(evaluator.limit)
            ids = self.order.setdefault(split, [])
            for d in view.dialogues:
                for s in d.sessions:
                    self.turns.update({(d.namespace, t.id): f"{t.speaker}: {t.text}" for t in s.turns})
                for i, (session, questions) in enumerate(stream_schedule(d)):
                    for q in questions:
                        if q.answerable or reader is not None:  # as evaluate: unanswerable needs a reader
                            self.questions[q.id] = (d, i, q, session)
                            ids.append(q.id)
        self._memories: OrderedDict[tuple[str, str], _Memory] = OrderedDict()
        self.forwards = 0
        self.memories_written = 0

    def __deepcopy__(self, memo: dict) -> "StudentRuntime":
        return self  # shared by every copy of the student: only the prompts are copied

    def predictors(self) -> list[tuple[str, dspy.Predict]]:
        """The optimisable predictors: the program's, then the reader's."""
        return optimisable(self.template, self.reader)

    def examples(self, split: str, cap: int | None = None) -> list[dspy.Example]:
        """The split's questions as DSPy examples (inputs ``question_id``, ``question``), the first
        ``cap`` in stream order."""
        out = []
        for qid in self.order[split][:cap]:
            q = self.questions[qid][2]
            out.append(dspy.Example(question_id=qid, question=q.text, answer=q.answer or "",
                                    category=q.category).with_inputs("question_id", "question"))
        return out

    # -- answering -------------------------------------------------------------------------------
    def answer(self, prompts: dict[str, dspy.Predict], question_id: str) -> dspy.Prediction:
        dialogue, index, q, session = self.questions[question_id]
        self.forwards += 1
        trace = dspy.settings.trace
        start = len(trace) if trace is not None else 0
        memory = self._memory(dialogue, index, prompts)
        retrieval = None

        def read(query, **kw):
            nonlocal retrieval
            retrieval = memory.program.read(query, **kw)
            return retrieval

        scorer = QuestionScorer(memory.program.store, top_k=self.top_k, context_budget=self.budget,
                                metric=self.metric, threshold=self.threshold, trace=memory.trace, view=memory.view,
                                reader=self.reader, judge=self.judge)
        outcome = scorer.ask(read, dialogue.namespace, q, question_query(dialogue, q, session), defaultdict(list))
        if trace is not None:
            self._credit(trace, start, prompts, memory.program)
        lost = (outcome.evidence.get("lost") or {}) if outcome is not None else {}
        missed = [(sid, self.turns.get((dialogue.namespace, sid), "")) for sid in lost]
        return dspy.Prediction(answer=(outcome.evidence.get("prediction") if outcome else None) or "",
                               context=retrieval.context if retrieval is not None else "",
                               score=outcome.score if outcome else 0.0, outcome=outcome, missed=missed,
                               metric=self.metric)

    def _memory(self, dialogue: Any, index: int, prompts: dict[str, dspy.Predict]) -> _Memory:
        """The conversation's memory written up to session ``index`` with these write-side prompts
        (reads never change memory, so questions later in the stream extend the same memory)."""
        key = (dialogue.namespace, self._fingerprint(prompts))
        memory = self._memories.get(key)
        if memory is None or memory.written > index + 1:
            program = MemoryProgram(self.template.architecture, resources=self.template.resources,
                                    top_k=self.template.top_k, context_budget=self.budget,
                                    config=self.template.module_config)
            memory = _Memory(program)
            self.memories_written += 1
        self._memories[key] = memory
        self._memories.move_to_end(key)
        while len(self._memories) > MEMORY_CACHE:
            self._memories.popitem(last=False)
        self._install(prompts, memory.program)
        schedule = stream_schedule(dialogue)
        if memory.written <= index:
            with TracedProgram(memory.program, memory.trace) as traced:
                for session, _ in schedule[memory.written:index + 1]:
                    traced.write(session)
            memory.written = index + 1
        return memory

    @staticmethod
    def _fingerprint(prompts: dict[str, dspy.Predict]) -> str:
        """The write-side prompts' state: memory written under one state is reused only under it."""
        state = {name: [p.signature.instructions, [dict(d) for d in p.demos]]
                 for name, p in sorted(prompts.items()) if name.split(".")[0].split(":")[0] not in READ_ROLES}
        return hashlib.sha256(json.dumps(state, sort_keys=True, default=str).encode()).hexdigest()[:16]

    def _targets(self, program: MemoryProgram) -> dict[str, dspy.Predict]:
        targets = dict(program_predictors(program))
        if self.reader is not None:
            targets[READER] = self.reader.answer
        return targets

    def _install(self, prompts: dict[str, dspy.Predict], program: MemoryProgram) -> None:
        """The student's prompts on the program's (and reader's) own predictors."""
        targets = self._targets(program)
        for name, p in prompts.items():
            copy_prompt(p, targets[name])

    def _credit(self, trace: list, start: int, prompts: dict[str, dspy.Predict], program: MemoryProgram) -> None:
        """Trace steps of the program's predictors credited to the student's (the optimisers find a
        step's predictor by identity, e.g. BootstrapFewShot's demos)."""
        by_id = {id(t): prompts[name] for name, t in self._targets(program).items() if name in prompts}
        for i in range(start, len(trace)):
            predictor, inputs, outputs = trace[i]
            if id(predictor) in by_id:
                trace[i] = (by_id[id(predictor)], inputs, outputs)


class PromptStudent(dspy.Module):
    """The program's and the reader's prompts as one DSPy module.

    Example::

        student = PromptStudent(StudentRuntime(program, evaluator, ["search"], reader))
        [name for name, _ in student.named_predictors()]   # ["prompts['reader.answer']", ...]

    Args:
        runtime: the shared `StudentRuntime`; its predictors' current prompts are the start.
    """

    def __init__(self, runtime: StudentRuntime):
        super().__init__()
        self.runtime = runtime
        self.prompts = {name: copy.deepcopy(p) for name, p in runtime.predictors()}

    def forward(self, question_id: str, question: str = "") -> dspy.Prediction:
        return self.runtime.answer(self.prompts, question_id)


def prompt_name(dspy_name: str) -> str:
    """``prompts['encoder:fact.extract']`` (the DSPy parameter name) -> ``encoder:fact.extract``."""
    return dspy_name[len("prompts['"):-2] if dspy_name.startswith("prompts['") else dspy_name

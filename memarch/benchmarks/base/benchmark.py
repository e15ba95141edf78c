"""`Benchmark`: the contract every benchmark implements — what it declares (name, architecture
family, protocol, metric, whether it scores per instance, data path, knobs, categories, what its
agent uses) and how it splits — with the stream protocol's data (dialogues) and defaults.

Three ways to split. ``split_by="dialogue"`` (the default when a benchmark has at least
`MIN_DIALOGUES_TO_SPLIT` dialogues) splits whole dialogues: test questions come from conversations
the search never wrote to memory — the stronger test of an architecture. ``split_by="question"``
splits the questions: every split sees the whole stream of sessions (memory holds dialogue, never
answers, so a search question teaches nothing about a test answer, only which design retrieves
well). ``split_by="instance"`` splits whole dialogues too, each by a hash of its own namespace
(`bucket`): the split of a dialogue never depends on which others are loaded (a benchmark read in
part, e.g. its first N instances, splits them as the whole file does), at shares that are only
near the fractions."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, Mapping

from memarch.benchmarks.base.data import Dialogue, Question
from memarch.benchmarks.base.splits import DEFAULT_FRACTIONS, MIN_DIALOGUES_TO_SPLIT, SPLIT_BY, SPLITS, \
    balanced_units, bucket
from memarch.errors import MemarchError
from memarch.pipeline.registry import FAMILIES

# The evaluation protocols a benchmark declares (`memarch.benchmarks.evaluation.runs` runs each).
STREAM = "stream"                  # sessions written in time order, questions asked at their read points
COLLECT_DEPLOY = "collect_deploy"  # agent tasks: collected without memory, then deployed with it
PROTOCOLS = (STREAM, COLLECT_DEPLOY)

# What callers read of a benchmark, all declared on `Benchmark` (`check_declarations` checks them).
DECLARED = ("name", "family", "protocol", "metric", "lm_free_metric", "official_report", "scores_per_instance",
            "categories", "path", "knobs", "split_unit", "uses_note_store", "uses_agent_lm", "opt_in_modules")


class Benchmark:
    """The benchmark contract, and a stream benchmark: dialogues whose sessions are written in time
    order and whose questions are asked once their evidence has been written.

    Example::

        bench = get_benchmark("generated", seed=0)
        search = bench.split("search")   # the same sessions, about half of the questions
        sum(len(d.questions) for d in search.dialogues)

    Subclasses fill ``self.dialogues`` (all splits) in ``__init__`` and declare their own ``name``;
    the other declarations come from the base of their protocol (`Benchmark`: stream;
    `TaskBenchmark`: collect -> deploy) and are overridden where a benchmark differs.

    Declared members (callers read them; nothing probes a benchmark for what it has):
        name: the catalog name (``get_benchmark(name)``).
        family: the architecture family it scores (``conversation`` / ``experience``).
        protocol: ``stream`` or ``collect_deploy``: which run evaluates it.
        metric: the metric its score always is (agent tasks: ``task_score``); None: the
            evaluation's metric (``EvaluationSettings.metric``).
        lm_free_metric: the metric an evaluation without an LM reader scores when none is named
            (a name of the metric registry); None: the registry's default (``answer_span``).
        official_report: the name of its official report in the metric registry
            (``OFFICIAL_REPORTS``: the benchmark's own retrieval metrics, computed beside ours, and
            its per-category bookkeeping); None: none.
        scores_per_instance: it scores instance by instance (dialogue by dialogue), so
            ``evaluate(on_instance=...)`` and a pruner can stop a trial between two.
        categories: the question (or task) categories it reports per category.
        path: the data file or directory it was read from; None when generated.
        knobs: the options it was generated with ({} for data read from a path).
        split_unit: what a split is drawn over (``dialogue``, ``question``, ``task``).
        uses_note_store: its agent keeps notes in a store (`use_note_store`).
        uses_agent_lm: its agent can be played by an LM (set ``agent_lm``).
        opt_in_modules: the search space includes the opt-in modules (an agent that uses them).
    """

    name: ClassVar[str] = "base"
    family: ClassVar[str] = "conversation"
    protocol: ClassVar[str] = STREAM
    metric: ClassVar[str | None] = None
    lm_free_metric: ClassVar[str | None] = None
    official_report: ClassVar[str | None] = None
    scores_per_instance: ClassVar[bool] = True
    uses_note_store: ClassVar[bool] = False
    uses_agent_lm: ClassVar[bool] = False
    opt_in_modules: ClassVar[bool] = False
    categories: tuple[str, ...] = ()
    path: Path | None = None
    knobs: Mapping[str, Any] = MappingProxyType({})
    agent_lm: Any = None  # the LM its agent plays with (None: LM-free), for a benchmark that uses one

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        check_declarations(cls)

    def __init__(self, dialogues: list[Dialogue] | None = None, *, seed: int = 0,
                 split_by: str = "auto", fractions: dict[str, float] | None = None,
                 split_name: str = "all"):
        self.dialogues: list[Dialogue] = list(dialogues or [])
        self.split_name = split_name
        self._set_split(int(seed), split_by, dict(fractions or DEFAULT_FRACTIONS))

    # -- splits ----------------------------------------------------------------------------------
    def _set_split(self, seed: int, split_by: str, fractions: dict[str, float]) -> None:
        if split_by not in SPLIT_BY:
            raise MemarchError(f"split_by must be one of {', '.join(SPLIT_BY)}, not {split_by!r}")
        if split_by == "auto":
            split_by = "dialogue" if len(self.dialogues) >= MIN_DIALOGUES_TO_SPLIT else "question"
        self.seed, self.split_by, self.fractions = seed, split_by, fractions
        self._unit_split: dict[str, str] = {}
        if split_by == "dialogue":
            self._unit_split = balanced_units(seed, [d.namespace for d in self.dialogues], fractions)
        elif split_by == "instance":  # each by its own hash: the same whichever others are loaded
            self._unit_split = {d.namespace: bucket(seed, d.namespace, fractions) for d in self.dialogues}

    @property
    def split_unit(self) -> str:
        """What a split is drawn over: ``dialogue``, ``instance`` (dialogues, each by its own hash) or
        ``question``."""
        return self.split_by

    def split_of(self, dialogue: Dialogue, question: Question) -> str:
        if self.split_by in ("dialogue", "instance"):
            hit = self._unit_split.get(dialogue.namespace)
            return hit if hit is not None else bucket(self.seed, dialogue.namespace, self.fractions)
        return bucket(self.seed, f"{dialogue.namespace}/{question.id}", self.fractions)

    def split_rule(self) -> dict[str, Any]:
        """What decides the split — seed, unit, shares — as an evaluation record keeps it."""
        return {"seed": self.seed, "split_by": self.split_by, "fractions": dict(self.fractions)}

    def use_split_rule(self, rule: Mapping[str, Any]) -> None:
        """Split as ``rule`` (a recorded `split_rule`; keys it lacks keep their value) says."""
        split_by = str(rule.get("split_by", self.split_by))
        split_by = "dialogue" if split_by == "unit" else split_by  # a program saved by earlier code
        self._set_split(int(rule.get("seed", self.seed)), split_by,
                        dict(rule.get("fractions", self.fractions)))

    def split_settings(self) -> dict[str, Any]:
        """How this benchmark splits (for reports, saved programs and landscapes)."""
        return {**self.split_rule(),
                "units": {name: sum(1 for v in self._unit_split.values() if v == name) for name in SPLITS}
                if self.split_by in ("dialogue", "instance") else None}

    def split(self, name: str) -> "Benchmark":
        """The same benchmark restricted to one split (``"all"`` returns everything)."""
        if name == "all":
            return self
        if name not in SPLITS:
            raise MemarchError(f"unknown split {name!r}; expected one of {', '.join(SPLITS)} or all")
        kept = []
        for d in self.dialogues:
            qs = [q for q in d.questions if self.split_of(d, q) == name]
            if qs:
                kept.append(replace(d, questions=qs))
        return self._view(dialogues=kept, split_name=name)

    def limit(self, n: int | None) -> "Benchmark":
        """The first ``n`` questions in stream order (dialogues kept whole up to the last needed)."""
        if n is None:
            return self
        kept, left = [], int(n)
        for d in self.dialogues:
            if left <= 0:
                break
            kept.append(replace(d, questions=d.questions[:left]))
            left -= len(kept[-1].questions)
        return self._view(dialogues=kept)

    def limit_per_split(self, n: int | None) -> "Benchmark":
        """The first ``n`` questions of each split in stream order (what `evaluate(..., limit=n)`
        scores of each split); a dialogue keeps all its sessions and the kept questions."""
        if n is None:
            return self
        left = {name: int(n) for name in SPLITS}
        kept = []
        for d in self.dialogues:
            qs = []
            for q in d.questions:
                split = self.split_of(d, q)
                if left.get(split, 0) > 0:
                    qs.append(q)
                    left[split] -= 1
            if qs:
                kept.append(replace(d, questions=qs))
        return self._view(dialogues=kept)

    def _view(self, **changes: Any) -> "Benchmark":
        """A shallow copy with some attributes replaced; the data itself is shared, never copied."""
        view = object.__new__(type(self))
        view.__dict__.update(self.__dict__)
        view.__dict__.update(changes)
        return view

    # -- the agent ---------------------------------------------------------------------------------
    def use_note_store(self, store: Any) -> None:
        """Let the agent keep notes in ``store`` (None: no notes); only a benchmark that declares
        ``uses_note_store`` has an agent that does."""
        raise MemarchError(f"{self.name}: its agent keeps no notes (uses_note_store is False)")

    # -- description -----------------------------------------------------------------------------
    def questions(self) -> list[Question]:
        return [q for d in self.dialogues for q in d.questions]

    def stats(self) -> dict[str, Any]:
        qs = self.questions()
        cats: dict[str, int] = {}
        for q in qs:
            cats[q.category] = cats.get(q.category, 0) + 1
        return {"benchmark": self.name, "split": self.split_name, "units": len(self.dialogues),
                "sessions": sum(len(d.sessions) for d in self.dialogues),
                "turns": sum(d.turn_count for d in self.dialogues), "questions": len(qs),
                "categories": dict(sorted(cats.items()))}

    def __repr__(self) -> str:
        s = self.stats()
        return f"<{type(self).__name__} {s['split']}: {s['units']} units, {s['questions']} questions>"


def check_declarations(cls: type[Benchmark]) -> None:
    """Refuse, when it is defined, a benchmark class whose declarations are missing or wrong: its
    own ``name``, a known family and protocol, flags that are bools, categories that are a tuple
    of names, per-instance scoring only under the stream protocol, and a ``use_note_store`` of its
    own when it declares ``uses_note_store``. A `TypeError` lists what is wrong."""
    problems = []
    if not isinstance(vars(cls).get("name"), str) or not vars(cls)["name"]:
        problems.append("declares no name of its own (name = '...')")
    if cls.family not in FAMILIES:
        problems.append(f"family {cls.family!r} is not one of {', '.join(FAMILIES)}")
    if cls.protocol not in PROTOCOLS:
        problems.append(f"protocol {cls.protocol!r} is not one of {', '.join(PROTOCOLS)}")
    for member, value in (("metric", cls.metric), ("lm_free_metric", cls.lm_free_metric),
                          ("official_report", cls.official_report)):
        if value is not None and not isinstance(value, str):
            problems.append(f"{member} {value!r} is neither a name nor None")
    flags = {"scores_per_instance": cls.scores_per_instance, "uses_note_store": cls.uses_note_store,
             "uses_agent_lm": cls.uses_agent_lm, "opt_in_modules": cls.opt_in_modules}
    problems += [f"{flag} is not a bool" for flag, value in flags.items() if not isinstance(value, bool)]
    if cls.scores_per_instance is True and cls.protocol != STREAM:
        problems.append("scores_per_instance: only the stream protocol scores instance by instance")
    if not isinstance(cls.categories, tuple) or not all(isinstance(c, str) for c in cls.categories):
        problems.append("categories is not a tuple of names")
    if cls.uses_note_store is True and cls.use_note_store is Benchmark.use_note_store:
        problems.append("declares uses_note_store but has no use_note_store(store)")
    if problems:
        raise TypeError(f"benchmark class {cls.__qualname__}: " + "; ".join(problems))


"""The `Benchmark` contract: dialogues (sessions to write, questions to ask) or agent tasks, the
metric's categories, and a deterministic search / validation / test split by seed.

Two ways to split. ``split_by="dialogue"`` (the default when a benchmark has at least
`MIN_DIALOGUES_TO_SPLIT` dialogues) splits whole dialogues: test questions come from conversations
the search never wrote to memory — the stronger test of an architecture. ``split_by="question"``
splits the questions: every split sees the whole stream of sessions (memory holds dialogue, never
answers, so a search question teaches nothing about a test answer, only which design retrieves
well)."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from dataclasses import dataclass, field, replace
from typing import Any, Callable, ClassVar

from memarch.errors import DataError, MemarchError
from memarch.pipeline.episodes import Episode

SPLITS = ("search", "validation", "test")
SPLIT_BY = ("auto", "question", "dialogue")
# With fewer dialogues a dialogue split leaves a split with one or none.
MIN_DIALOGUES_TO_SPLIT = 6
# Shares of the questions (or units) per split; search is where the optimiser looks.
DEFAULT_FRACTIONS = {"search": 0.5, "validation": 0.25, "test": 0.25}


@dataclass
class Question:
    """One question of a dialogue, with its gold answer and gold evidence (turn ids).

    ``answer`` is None for an unanswerable (adversarial) question: excluded from the LM-free
    recall, scored only with an LM reader.
    """

    id: str
    text: str
    answer: str | None
    evidence: list[str] = field(default_factory=list)
    category: str = ""
    time: str | None = None
    ask_after: int | None = None  # session index after which it is asked (None: once evidence is written)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def answerable(self) -> bool:
        return self.answer is not None and self.category != "adversarial"


@dataclass
class Dialogue:
    """One unit of a stream benchmark: a namespace (conversation or story), its sessions in time
    order, and the questions asked about it."""

    namespace: str
    sessions: list[Episode]
    questions: list[Question]
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def turn_count(self) -> int:
        return sum(len(s.turns) for s in self.sessions)


def data_root(data: "str | os.PathLike | None", dataset: str, what: str) -> Path:
    """``data`` as a path, else ``$MEMARCH_DATA_DIR``; one `DataError` line naming ``what`` to pass
    (e.g. ``"--data PATH to the bAbI directory"``) when neither is given."""
    if data is None:
        root = os.environ.get("MEMARCH_DATA_DIR")
        if not root:
            raise DataError(f"{dataset}: no data path given (pass {what} or set MEMARCH_DATA_DIR)")
        data = root
    return Path(data)


def _hash01(seed: int, key: str) -> float:
    return int.from_bytes(hashlib.sha256(f"{seed}\x1f{key}".encode()).digest()[:8], "big") / 2**64


def balanced_units(seed: int, keys: list[str], fractions: dict[str, float]) -> dict[str, str]:
    """Whole units (dialogues) to splits in the given shares: units ordered by a hash of (seed, key);
    ``round(n x search share)`` to search, ``floor(n x validation share)`` to validation, the rest
    (the report split gets the odd unit) to test; every split gets a unit when there are three or
    more.

    Example::

        balanced_units(0, [f"conv-{i}" for i in range(10)], DEFAULT_FRACTIONS)   # 5 / 2 / 3 units
    """
    import math

    order = sorted(dict.fromkeys(keys), key=lambda k: (_hash01(seed, k), k))
    n = len(order)
    n_search = int(round(n * fractions["search"]))
    n_val = int(math.floor(n * fractions["validation"] + 1e-9))
    if n >= 3:
        n_search, n_val = max(1, min(n_search, n - 2)), max(1, n_val)
        n_val = min(n_val, n - n_search - 1)
    return {k: ("search" if i < n_search else "validation" if i < n_search + n_val else "test")
            for i, k in enumerate(order)}


def _bucket(seed: int, key: str, fractions: dict[str, float]) -> str:
    """Deterministic, order-independent split assignment: a hash of (seed, key) placed on [0, 1)."""
    h = _hash01(seed, key)
    acc = 0.0
    for name in SPLITS:
        acc += fractions[name]
        if h < acc:
            return name
    return SPLITS[-1]


class Benchmark:
    """A stream benchmark: dialogues whose sessions are written in time order and whose questions
    are asked once their evidence has been written.

    Example::

        bench = get_benchmark("generated", seed=0)
        search = bench.split("search")   # the same sessions, about half of the questions
        sum(len(d.questions) for d in search.dialogues)

    Subclasses fill ``self.dialogues`` (all splits) in ``__init__`` and set ``name``.
    """

    name: ClassVar[str] = "base"
    protocol: ClassVar[str] = "stream"
    categories: ClassVar[tuple[str, ...]] = ()
    # Whether the search space includes the opt-in modules (an agent that uses them, e.g. notes).
    opt_in_modules: ClassVar[bool] = False

    def __init__(self, dialogues: list[Dialogue] | None = None, *, seed: int = 0,
                 split_by: str = "auto", fractions: dict[str, float] | None = None,
                 split_name: str = "all"):
        split_by = "dialogue" if split_by == "unit" else split_by  # "unit": the earlier name
        if split_by not in SPLIT_BY:
            raise MemarchError(f"split_by must be one of {', '.join(SPLIT_BY)}, not {split_by!r}")
        self.dialogues: list[Dialogue] = list(dialogues or [])
        self.seed = int(seed)
        if split_by == "auto":
            split_by = "dialogue" if len(self.dialogues) >= MIN_DIALOGUES_TO_SPLIT else "question"
        self.split_by = split_by
        self.fractions = dict(fractions or DEFAULT_FRACTIONS)
        self.split_name = split_name
        self._unit_split = balanced_units(self.seed, [d.namespace for d in self.dialogues], self.fractions) \
            if split_by == "dialogue" else {}

    # -- splits ----------------------------------------------------------------------------------
    def split_of(self, dialogue: Dialogue, question: Question) -> str:
        if self.split_by == "dialogue":
            hit = self._unit_split.get(dialogue.namespace)
            return hit if hit is not None else _bucket(self.seed, dialogue.namespace, self.fractions)
        return _bucket(self.seed, f"{dialogue.namespace}/{question.id}", self.fractions)

    def split_settings(self) -> dict[str, Any]:
        """How this benchmark splits (for reports, saved programs and landscapes)."""
        return {"split_by": self.split_by, "seed": self.seed, "fractions": dict(self.fractions),
                "units": {name: sum(1 for v in self._unit_split.values() if v == name) for name in SPLITS}
                if self.split_by == "dialogue" else None}

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

    def _view(self, **changes: Any) -> "Benchmark":
        """A shallow copy with some attributes replaced; the data itself is shared, never copied."""
        view = object.__new__(type(self))
        view.__dict__.update(self.__dict__)
        view.__dict__.update(changes)
        return view

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


@dataclass
class AgentTask:
    """One agent task of a collection -> deployment benchmark (e.g. a TextWorldExpress game)."""

    id: str
    text: str
    namespace: str = "default"
    metadata: dict[str, Any] = field(default_factory=dict)


class TaskBenchmark(Benchmark):
    """An agent benchmark under the collection -> deployment protocol (ALMA, ANCHORS 3).

    Subclasses fill ``self.tasks`` and implement :meth:`attempt` (run the agent on one task with
    an optional memory context, return the trajectory as an `Episode` with its outcome) and may
    override :meth:`score` and :meth:`gold_sources`. Splits are over tasks; inside a split the first ``collect_share`` of
    the tasks are collected (no memory read, trajectories written), the rest deployed.
    """

    protocol: ClassVar[str] = "collect_deploy"

    def __init__(self, tasks: list[AgentTask] | None = None, *, mode: str = "static",
                 collect_share: float = 0.5, **split_options: Any):
        if mode not in ("static", "dynamic"):
            raise MemarchError(f"mode must be 'static' (memory frozen while deployed) or 'dynamic', not {mode!r}")
        super().__init__([], split_by="unit", **split_options)
        self.tasks: list[AgentTask] = list(tasks or [])
        self.mode = mode
        self.collect_share = float(collect_share)

    def attempt(self, task: AgentTask, context: str | None, retrieval: Any = None) -> Episode:
        """Play ``task`` with the memory ``context`` (None while collecting); ``retrieval`` is the
        structured read behind it (scored items), for agents that use more than the text."""
        raise NotImplementedError

    def score(self, task: AgentTask, episode: Episode) -> float:
        return 1.0 if episode.outcome == "success" else 0.0

    def gold_sources(self, task: AgentTask) -> list[str]:
        """Source ids (step or episode ids) memory should return for ``task``; enables attribution."""
        return []

    def split(self, name: str) -> "TaskBenchmark":
        if name == "all":
            return self
        if name not in SPLITS:
            raise MemarchError(f"unknown split {name!r}; expected one of {', '.join(SPLITS)} or all")
        return self._view(tasks=[t for t in self.tasks if _bucket(self.seed, t.id, self.fractions) == name],
                          split_name=name)

    def limit(self, n: int | None) -> "TaskBenchmark":
        if n is None:
            return self
        return self._view(tasks=self.tasks[: int(n)])

    def phases(self) -> tuple[list[AgentTask], list[AgentTask]]:
        """(collection tasks, deployment tasks) of this split, disjoint, in a fixed order."""
        cut = int(round(len(self.tasks) * self.collect_share))
        return self.tasks[:cut], self.tasks[cut:]

    def stats(self) -> dict[str, Any]:
        collect, deploy = self.phases()
        return {"benchmark": self.name, "split": self.split_name, "tasks": len(self.tasks),
                "collect": len(collect), "deploy": len(deploy), "mode": self.mode}


# The benchmarks by name are the `memarch.benchmarks` package's to know (its named modules sit above
# this one); the package hands its lookup here when it is imported, which is before any of its
# modules runs, so a name given to `evaluate` resolves without an import reaching up.
_CATALOG: "Callable[[str], Benchmark] | None" = None


def use_catalog(lookup: "Callable[[str], Benchmark]") -> None:
    """Set how `resolve_benchmark` turns a name into a benchmark (`memarch.benchmarks.get_benchmark`)."""
    global _CATALOG
    _CATALOG = lookup


def resolve_benchmark(benchmark: "Benchmark | str") -> "Benchmark":
    """``benchmark`` itself, or the benchmark a name means (with its default data and knobs)."""
    if not isinstance(benchmark, str):
        return benchmark
    if _CATALOG is None:
        raise MemarchError(f"benchmark {benchmark!r}: no benchmark catalog (import memarch.benchmarks)")
    return _CATALOG(benchmark)

"""`Evaluator`: what the search scores an architecture with — ``evaluator(architecture_or_None,
data) -> TrialResult`` — and every member that compile, compare, landscapes, prompts and tracking
read, declared here with its default (no caller probes an evaluator for what it has)."""
from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any, Callable, Iterable

from memarch.errors import MemarchError

if TYPE_CHECKING:
    from memarch.benchmarks.base import Benchmark
    from memarch.optimizers.pruners.instances import OnInstance
    from memarch.benchmarks.evaluation.settings import EvaluationSettings
    from memarch.pipeline.architecture import Architecture
    from memarch.pipeline.evaluation_record import EvaluationRecord
    from memarch.pipeline.prefetch import Prefetch
    from memarch.pipeline.space import ArchitectureSpace
    from memarch.pipeline.trial import TrialResult

# A plain function ``(architecture, data) -> TrialResult``: what `as_evaluator` wraps in a `CallableEvaluator`.
EvaluatorFunction = Callable[[Any, Any], "TrialResult"]


class Evaluator(abc.ABC):
    """Scores one architecture (None: the no-memory agent) on named data (a split such as
    ``"search"``). Subclasses implement ``__call__`` and override the members they know.

    Example::

        class Constant(Evaluator):
            def __call__(self, architecture, data="search", *, on_instance=None):
                return TrialResult(architecture, "toy", str(data), 0.5)

        MemarchOptimizer(Constant(), budget=5).compile("conversation")

    Members (each with a default here): ``family``, ``metric``, ``benchmark``, ``limit``,
    ``settings``, ``memory_budget``, ``evaluations``, ``opt_in_modules``, `supports_instances`,
    `program_settings`, `evaluation_record`, `prefetch`; `architecture_space` is built from them.
    """

    @abc.abstractmethod
    def __call__(self, architecture: "Architecture | None", data: Any = "search", *,
                 on_instance: "OnInstance | None" = None) -> "TrialResult":
        """The result of ``architecture`` on ``data``; a failed evaluation is a result with
        ``failed=True``, not an exception. ``on_instance`` is passed only when
        `supports_instances` says so (see `memarch.optimizers.pruners`)."""

    @property
    def family(self) -> str:
        """The architecture family scored: ``conversation`` or ``experience``."""
        return "conversation"

    @property
    def metric(self) -> str:
        """The name of the metric a result's ``score`` is (``answer_span``, ``task_score``, ...;
        ``""``: not known)."""
        return ""

    @property
    def benchmark(self) -> "Benchmark | None":
        """The benchmark scored, when there is one (tracking tags it, prompts read its splits)."""
        return None

    @property
    def limit(self) -> int | None:
        """Only the first N questions (or tasks) of each split are scored (None: all)."""
        return None

    @property
    def settings(self) -> "EvaluationSettings | None":
        """How each evaluation reads and scores (context budget, top_k, metric, reader, judge);
        None for an evaluator that is not a benchmark evaluation."""
        return None

    @property
    def memory_budget(self) -> Any:
        """The memory budget every trial's program keeps (a `MemoryBudget`; None: unlimited)."""
        return None

    @property
    def evaluations(self) -> int | None:
        """Evaluations actually run (a cache counts only its misses; None: not counted)."""
        return None

    @property
    def opt_in_modules(self) -> bool:
        """Whether the search space includes the opt-in modules (a benchmark whose agent uses them)."""
        bench = self.benchmark
        return bool(bench.opt_in_modules) if bench is not None else False

    def supports_instances(self) -> bool:
        """Whether ``__call__`` scores instance by instance with ``on_instance`` (what a pruner needs)."""
        return False

    def program_settings(self) -> dict[str, Any]:
        """What a compiled program must carry to read as the trials did (``top_k``,
        ``context_budget``, ``config``); {} when the evaluator does not say."""
        return {}

    def evaluation_record(self, scores: dict[str, float | None], metric: str) -> "EvaluationRecord | None":
        """How reported ``scores`` (per split) were measured, for the saved program (None: not known)."""
        return None

    def prefetch(self, data: "list[Any]", *, encoders: "Iterable[str] | None" = None) -> "Prefetch | None":
        """Start embedding, on the idle core, the texts evaluating on ``data`` (split names) will
        embed — of ``encoders`` only, when given (the searched space's); the running `Prefetch`
        (its ``stop()`` ends it) or None when there is nothing to do."""
        return None

    def architecture_space(self, family: str | None = None, *, lm_available: bool = True,
                           exclude: "Iterable[str]" = ()) -> "ArchitectureSpace":
        """The space this evaluator is searched in: ``family`` (default its own), with the opt-in
        modules when it declares them (``opt_in_modules``), less the modules in ``exclude``.
        compile, compare and the CLI all take their space from here, so the library and the CLI
        search the same one."""
        from memarch.pipeline.space import ArchitectureSpace

        return ArchitectureSpace(family or self.family, lm_available=lm_available, opt_in=self.opt_in_modules,
                                 exclude=exclude)


class CallableEvaluator(Evaluator):
    """A plain ``function(architecture, data) -> TrialResult`` as an `Evaluator` (every member at
    its default but ``family``).

    Example::

        evaluator = CallableEvaluator(lambda arch, data: my_trial_result(arch, data))
    """

    def __init__(self, function: EvaluatorFunction, *, family: str = "conversation"):
        if not callable(function):
            raise MemarchError(f"an evaluator must be callable as evaluator(architecture, data), not "
                               f"{type(function).__name__}")
        self.function = function
        self._family = family

    @property
    def family(self) -> str:
        return self._family

    def __call__(self, architecture: "Architecture | None", data: Any = "search", *,
                 on_instance: "OnInstance | None" = None) -> "TrialResult":
        return self.function(architecture, data)


def as_evaluator(evaluator: "Evaluator | EvaluatorFunction", *,
                 family: str = "conversation") -> Evaluator:
    """``evaluator`` itself, or a plain callable wrapped in a `CallableEvaluator`."""
    return evaluator if isinstance(evaluator, Evaluator) else CallableEvaluator(evaluator, family=family)

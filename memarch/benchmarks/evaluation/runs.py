"""The run of each evaluation protocol, found by the name a benchmark declares
(`Benchmark.protocol`): ``stream`` -> `StreamProtocol`, ``collect_deploy`` ->
`CollectDeployProtocol`. `evaluate` calls ``protocol_of(view).run(...)`` and never asks which kind
of benchmark it holds."""
from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Callable, ClassVar

from memarch.benchmarks.base import COLLECT_DEPLOY, STREAM, Benchmark
from memarch.benchmarks.evaluation.settings import EvaluationSettings
from memarch.benchmarks.evaluation.stream import run_stream
from memarch.benchmarks.evaluation.tasks import run_tasks
from memarch.errors import MemarchError

if TYPE_CHECKING:
    from memarch.pipeline.program import MemoryProgram
    from memarch.pipeline.trial import TrialResult

OnInstance = Callable[[int, int, list[float]], bool]


class EvaluationProtocol(abc.ABC):
    """How a benchmark's split is evaluated: one `run` per protocol.

    Example::

        protocol_of(view).run(program, view, EvaluationSettings(top_k=8))
    """

    name: ClassVar[str]

    @abc.abstractmethod
    def run(self, program: "MemoryProgram | None", view: Benchmark, settings: EvaluationSettings, *,
            on_instance: OnInstance | None = None) -> "TrialResult":
        """The result of ``program`` (None: the no-memory agent) on ``view`` (a split of a benchmark
        of this protocol), read and scored as ``settings`` say (its ``top_k`` resolved);
        ``on_instance`` as `evaluate` describes it, for a benchmark that scores per instance."""


class StreamProtocol(EvaluationProtocol):
    """Sessions written in time order, each question asked once its evidence is written (`run_stream`)."""

    name = STREAM

    def run(self, program: "MemoryProgram | None", view: Benchmark, settings: EvaluationSettings, *,
            on_instance: OnInstance | None = None) -> "TrialResult":
        return run_stream(program, view, settings, on_instance=on_instance)[0]


class CollectDeployProtocol(EvaluationProtocol):
    """Agent tasks collected without memory, then deployed with it (`run_tasks`); scored as one,
    so it takes no ``on_instance``."""

    name = COLLECT_DEPLOY

    def run(self, program: "MemoryProgram | None", view: Benchmark, settings: EvaluationSettings, *,
            on_instance: OnInstance | None = None) -> "TrialResult":
        check_on_instance(view, on_instance)
        return run_tasks(program, view, settings.read_top_k, settings.context_budget, settings.success_threshold)


EVALUATION_PROTOCOLS: dict[str, EvaluationProtocol] = {p.name: p for p in (StreamProtocol(), CollectDeployProtocol())}


def protocol_of(bench: Benchmark) -> EvaluationProtocol:
    """The protocol ``bench`` declares."""
    return EVALUATION_PROTOCOLS[bench.protocol]


def check_on_instance(bench: Benchmark, on_instance: OnInstance | None) -> None:
    """Refuse ``on_instance`` for a benchmark that does not score instance by instance (one
    `MemarchError` line): a pruner would otherwise never be asked, without a word."""
    if on_instance is not None and not bench.scores_per_instance:
        raise MemarchError(f"{bench.name} does not score instance by instance (its {bench.protocol} protocol "
                           "scores the split as one): on_instance, and so a pruner, needs a benchmark that does")

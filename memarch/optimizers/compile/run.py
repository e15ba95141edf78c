"""`CompileRun`: the record of one compile, filled step by step as `MemarchOptimizer` goes (the
study, the search and its history, the runoff, the test, stage two, the saved file); the
`CompileReport` is made from it (`CompileReport.from_run`)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memarch.optimizers.prompts.optimize import PromptReport
    from memarch.optimizers.search.history import History
    from memarch.optimizers.search.runner import Search
    from memarch.optimizers.search.settings import SearchSettings
    from memarch.pipeline.architecture import Architecture
    from memarch.pipeline.trial import TrialResult


@dataclass
class CompileRun:
    """What one compile did so far.

    Example::

        run = CompileRun(settings)
        run.study = settings.default_study_name("conversation")
        run.search, run.history = search, search.run(study)
        ...
        CompileReport.from_run(run)
    """

    settings: "SearchSettings"
    study: str = ""  # the study's name, once the space (its family) is known
    started: float = field(default_factory=time.perf_counter)
    warm_start: list[str] = field(default_factory=list)  # round 0's architecture keys
    sampler: Any = None  # the strategy (its rounds and counts go into the report)
    search: "Search | None" = None
    history: "History | None" = None  # the study's distinct evaluated architectures
    pick: "Architecture | None" = None  # chosen on validation
    finalists: dict[str, float | None] = field(default_factory=dict)  # key -> validation score (None: failed)
    validation: dict[str, Any] = field(default_factory=dict)  # the runoff's details (values, front)
    test_result: "TrialResult | None" = None  # the pick on test (None: no test split)
    prompts: "PromptReport | None" = None  # stage two, when asked for
    program_path: str | None = None  # where the program was saved

    @property
    def wall_s(self) -> float:
        """Seconds since the compile started."""
        return time.perf_counter() - self.started

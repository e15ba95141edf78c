"""`SearchSettings`: how a search runs — strategy, budget, seed, study, warm start, runoff, the
study's objectives and selection, the space, the pruner and stage two (prompt optimisation) — one
validated object that `MemarchOptimizer` and `compare` take instead of two dozen keywords."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from memarch.errors import MemarchError
from memarch.optimizers.search.objectives import SINGLE, parse_objectives
from memarch.optimizers.search.selection import Selection, parse_selection
from memarch.pipeline.settings import Settings

WARM_STARTS = ("presets", "none")


@dataclass(frozen=True)
class SearchSettings(Settings):
    """The settings of one search (one strategy, one seed).

    Example::

        settings = SearchSettings(strategy="tpe", budget=20, seed=1, space_mode="full")
        MemarchOptimizer(evaluator, settings).compile("conversation")
        settings.replace(seed=2)

    Args:
        strategy: ``guided`` (default), ``random``, ``tpe``, ... (`memarch.optimizers.samplers.STRATEGIES`).
        budget: distinct architectures evaluated on the train data (the warm start included;
            invalid draws, repeats of an evaluated architecture and failed trials do not count;
            with a pruner, full-evaluation equivalents).
        seed: sampler / seed-round randomness.
        k: guided proposals per round, and the warm start's size.
        storage: Optuna storage URL (None: in memory; ``sqlite:///mlruns/optuna.db`` on the CLI).
        study_name: default ``<family>-<strategy>-s<seed>``.
        resume: continue an existing study of that name.
        finalists: how many top search architectures are re-scored on validation.
        warm_start: ``"presets"`` (default): round 0 is ``k`` human-designed presets chosen by
            ``seed`` — the same for every strategy of that seed; ``"none"``; or a list of architectures.
        max_failures: consecutive failed trials that stop the study (one clear error).
        objectives: ``("quality",)`` (default) or quality and costs, e.g. ``("quality",
            "memory_words")`` (a string ``"quality,memory_words"`` is parsed).
        select: how the pick is chosen on validation: ``"quality"``, ``"knee"`` or a cost limit
            such as ``"memory_words<=5000"`` (a `Selection` once validated).
        space_mode: ``categorical`` (the method's space) or ``full`` (plus each chosen module's
            numeric knobs as conditional parameters).
        pruner: ``none`` or ``median`` / ``sha`` / ``hyperband`` / ``wilcoxon``.
        prompt_optimizer: stage two once the architecture is chosen: ``"none"``, ``"bootstrap"``,
            ``"mipro"`` or ``"gepa"``.
        prompt_examples, prompt_budget: questions per split inside that optimizer, and its budget.
        log_model: with a tracker, log the compiled program as an MLflow model of the parent run.
        register: also register that model under this name in the MLflow model registry.
        prefetch: embed, in a background process on the idle core, the texts the search, the
            runoff and the test will embed (`Evaluator.prefetch`).
    """

    strategy: str = "guided"
    budget: int = 30
    seed: int | None = 0
    k: int = 3
    storage: str | None = None
    study_name: str | None = None
    resume: bool = False
    finalists: int = 3
    warm_start: Any = "presets"
    max_failures: int = 5
    objectives: tuple[str, ...] = SINGLE
    select: Any = "quality"
    space_mode: str = "categorical"
    pruner: str = "none"
    prompt_optimizer: str = "none"
    prompt_examples: int = 20
    prompt_budget: int = 60
    log_model: bool = True
    register: str | None = None
    prefetch: bool = True

    what: ClassVar[str] = "search setting"

    def __post_init__(self) -> None:
        from memarch.optimizers.prompts.optimize import check_prompt_optimizer
        from memarch.optimizers.pruners import check_pruner
        from memarch.optimizers.search.param_space import MODES

        if self.budget < 1:
            raise MemarchError(f"budget must be at least 1 trial, got {self.budget}")
        if isinstance(self.warm_start, str) and self.warm_start not in WARM_STARTS:
            raise MemarchError(f"warm_start must be 'presets', 'none' or a list of architectures, "
                               f"not {self.warm_start!r}")
        if self.space_mode not in MODES:
            raise MemarchError(f"unknown search space {self.space_mode!r}; expected one of {', '.join(MODES)}")
        objectives = parse_objectives(self.objectives)
        selection = self.select if isinstance(self.select, Selection) else parse_selection(self.select, objectives)
        fixed = {"budget": int(self.budget), "finalists": max(1, self.finalists), "objectives": objectives,
                 "select": selection, "pruner": check_pruner(self.pruner),
                 "prompt_optimizer": check_prompt_optimizer(self.prompt_optimizer)}
        for name, value in fixed.items():
            object.__setattr__(self, name, value)

    @property
    def selection(self) -> Selection:
        """The validated ``select``."""
        return self.select

    @classmethod
    def of(cls, settings: "SearchSettings | None" = None, **changes: Any) -> "SearchSettings":
        """``settings`` (default: the defaults) with ``changes`` by name."""
        base = settings if settings is not None else cls()
        return base.replace(**changes) if changes else base

    def default_study_name(self, family: str) -> str:
        return self.study_name or f"{family}-{self.strategy}-s{self.seed}"

"""`SearchSettings`: how a search runs — strategy, budget, seed, study, warm start, runoff, the
study's objectives and selection, the space, the pruner and stage two (prompt optimisation) — one
validated object that `MemarchOptimizer` and `compare` take and carry down to the runner (`Search`)
and its trial function; `PromptSettings`: stage two's part of it, what `optimize_prompts` takes.

They live here, below compile and prompts, because the lowest layer that reads them (the runner)
must import them; ``memarch.optimizers.compile`` and ``memarch`` export them. Each default is
defined once, here: `DEFAULT_BUDGET`, `DEFAULT_FINALISTS`."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from memarch.errors import MemarchError
from memarch.optimizers.search.objectives import SINGLE, parse_objectives
from memarch.optimizers.search.selection import Selection, parse_selection
from memarch.pipeline.settings import Settings

# Every entry point's default (compile, compare, the CLI, a landscape replay): distinct evaluated
# architectures per run, and how many of the best are re-scored on validation to choose the pick.
DEFAULT_BUDGET = 20
DEFAULT_FINALISTS = 3
WARM_STARTS = ("presets", "none")
PROMPT_OPTIMIZERS = ("none", "bootstrap", "mipro", "gepa")


def check_prompt_optimizer(name: str) -> str:
    if name not in PROMPT_OPTIMIZERS:
        raise MemarchError(f"unknown prompt optimizer {name!r} (--optimize-prompts); expected one of "
                           f"{', '.join(PROMPT_OPTIMIZERS)}")
    return name


@dataclass(frozen=True)
class PromptSettings(Settings):
    """How stage two optimises a compiled program's prompts (`optimize_prompts`).

    Example::

        optimize_prompts(program, evaluator, PromptSettings("gepa", examples=10, budget=40), lm=lm)
        SearchSettings(prompt_optimizer="mipro").prompts   # compile's, from its search settings

    Args:
        optimizer: ``none``, ``bootstrap`` (BootstrapFewShot: demos), ``mipro`` (MIPROv2:
            instructions and demos) or ``gepa`` (GEPA: instructions, from feedback on failures).
        examples: questions of each split used inside the optimizer (the first, in stream order).
        budget: GEPA's metric calls; MIPRO's trials are ``budget // len(valset examples)``.
        seed: the optimizer's randomness.
    """

    optimizer: str = "none"
    examples: int = 20
    budget: int = 60
    seed: int = 0

    what: ClassVar[str] = "prompt setting"

    def __post_init__(self) -> None:
        check_prompt_optimizer(self.optimizer)


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
            with a pruner, full-evaluation equivalents). Default `DEFAULT_BUDGET`.
        seed: sampler / seed-round randomness.
        k: guided proposals per round, and the warm start's size.
        storage: Optuna storage URL (None: in memory; ``sqlite:///mlruns/optuna.db`` on the CLI).
        study_name: default ``<family>-<strategy>-s<seed>``.
        resume: continue an existing study of that name.
        finalists: how many top search architectures are re-scored on validation (default
            `DEFAULT_FINALISTS`).
        warm_start: ``"presets"`` (default): round 0 is ``k`` human-designed presets chosen by
            ``seed`` — the same for every strategy of that seed; ``"none"``; or a list of architectures.
        max_failures: consecutive failed trials that stop the study (one clear error; 0: never).
        stuck_limit: trials in a row that evaluate nothing new before the study is stopped
            (None: 20 x budget + 100).
        objectives: ``("quality",)`` (default) or quality and costs, e.g. ``("quality",
            "memory_words")`` (a string ``"quality,memory_words"`` is parsed).
        select: how the pick is chosen on validation: ``"quality"``, ``"knee"`` or a cost limit
            such as ``"memory_words<=5000"`` (a `Selection` once validated).
        space_mode: ``categorical`` (the method's space) or ``full`` (plus each chosen module's
            numeric knobs as conditional parameters).
        pruner: ``none`` or ``median`` / ``sha`` / ``hyperband`` / ``wilcoxon``.
        prompt_optimizer: stage two once the architecture is chosen: ``"none"``, ``"bootstrap"``,
            ``"mipro"`` or ``"gepa"``.
        prompt_examples, prompt_budget: questions per split inside that optimizer, and its budget
            (together: `prompts`).
        log_model: with a tracker, log the compiled program as an MLflow model of the parent run.
        register: also register that model under this name in the MLflow model registry.
        prefetch: embed, in a background process on the idle core, the texts the search, the
            runoff and the test will embed (`Evaluator.prefetch`).
        exclude: modules left out of the searched space, e.g. ``("entity",)`` or
            ``"encoder:entity,retriever:graph"`` (`ArchitectureSpace` ``exclude``): one the task
            cannot afford or deploy. A student or warm start that uses one is refused.
    """

    strategy: str = "guided"
    budget: int = DEFAULT_BUDGET
    seed: int | None = 0
    k: int = 3
    storage: str | None = None
    study_name: str | None = None
    resume: bool = False
    finalists: int = DEFAULT_FINALISTS
    warm_start: Any = "presets"
    max_failures: int = 5
    stuck_limit: int | None = None
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
    exclude: tuple[str, ...] = ()

    what: ClassVar[str] = "search setting"

    def __post_init__(self) -> None:
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
                 "prompt_optimizer": check_prompt_optimizer(self.prompt_optimizer),
                 "exclude": (self.exclude,) if isinstance(self.exclude, str) else tuple(self.exclude)}
        for name, value in fixed.items():
            object.__setattr__(self, name, value)

    @property
    def selection(self) -> Selection:
        """The validated ``select``."""
        return self.select

    @property
    def stop_when_stuck(self) -> int:
        """``stuck_limit``, or its default for this budget."""
        return self.stuck_limit or 20 * self.budget + 100

    @property
    def prompts(self) -> PromptSettings:
        """Stage two's settings (its randomness: this search's seed)."""
        return PromptSettings(self.prompt_optimizer, self.prompt_examples, self.prompt_budget, self.seed or 0)

    def default_study_name(self, family: str) -> str:
        return self.study_name or f"{family}-{self.strategy}-s{self.seed}"

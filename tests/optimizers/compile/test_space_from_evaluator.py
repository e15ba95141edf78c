"""`compile()` and `compare()` search the space the evaluator declares: a benchmark whose agent uses
the opt-in modules (TextWorldExpress's note taking: the ``files`` store) is searched with them from
Python as from the CLI, so the library and the CLI search the same space."""
from __future__ import annotations

import optuna

from memarch.cli.compile import evaluator_space
from memarch.optimizers.comparison import compare
from memarch.optimizers.compile import MemarchOptimizer
from memarch.optimizers.evaluators import Evaluator
from memarch.optimizers.search.study import SPACE_ATTR
from memarch.pipeline.trial import TrialResult

optuna.logging.set_verbosity(optuna.logging.WARNING)


class NoteTaking(Evaluator):
    """An experience evaluator whose benchmark's agent takes notes (declares the opt-in modules)."""

    family = "experience"
    opt_in_modules = True

    def __call__(self, architecture, data="search", *, on_instance=None):
        score = 0.0 if architecture is None else (len(architecture.key()) % 7) / 7
        return TrialResult(architecture, "toy", str(data), score)


def _stores(study) -> list[str]:
    return study.user_attrs[SPACE_ATTR]["stores"]


def test_compile_searches_the_evaluators_opt_in_modules():
    evaluator = NoteTaking()
    opt = MemarchOptimizer(evaluator, strategy="random", budget=2, warm_start="none", prefetch=False)
    opt.compile("experience", testset=None)
    cli_space = evaluator_space(evaluator, None)
    assert "files" in cli_space.stores
    assert _stores(opt.study) == cli_space.stores  # the library searches what the CLI searches


def test_a_program_or_architecture_student_too(tmp_path):
    from memarch.pipeline.architecture import Architecture

    student = Architecture(("trajectory",), "files", "hybrid", "tool_manager")
    opt = MemarchOptimizer(NoteTaking(), strategy="random", budget=2, warm_start="none", prefetch=False)
    opt.compile(student, testset=None)
    assert "files" in _stores(opt.study)


def test_compare_searches_it_too(tmp_path):
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    compare(NoteTaking(), "experience", ["random"], seeds=1, budget=2, warm_start="none", baselines=False,
            prefetch=False, storage=storage)
    study = optuna.load_study(study_name="compare-experience-random-s0", storage=storage)
    assert _stores(study) == evaluator_space(NoteTaking(), None).stores and "files" in _stores(study)


def test_an_evaluator_without_opt_in_modules_leaves_them_out():
    class Plain(NoteTaking):
        opt_in_modules = False

    opt = MemarchOptimizer(Plain(), strategy="random", budget=2, warm_start="none", prefetch=False)
    opt.compile("experience", testset=None)
    assert "files" not in _stores(opt.study)

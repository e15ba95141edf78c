"""Modules left out of a search (`exclude`, `--exclude`): a module a task cannot afford or deploy is
neither proposed, nor in the warm start, nor embedded ahead; a name that is not a module, or names
modules of two roles, is one clear error."""
from __future__ import annotations

import json
import subprocess
import sys

import optuna
import pytest

from memarch.benchmarks.evaluation.texts_ahead import texts_ahead
from memarch.errors import MemarchError
from memarch.optimizers.compile import MemarchOptimizer
from memarch.optimizers.evaluators import Evaluator
from memarch.optimizers.search.study import SPACE_ATTR
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.presets import preset_architectures, warm_start_architectures
from memarch.pipeline.space import ArchitectureSpace
from memarch.pipeline.trial import TrialResult

optuna.logging.set_verbosity(optuna.logging.WARNING)


class Toy(Evaluator):
    """A conversation evaluator whose score favours the entity encoder (what an exclude must beat)."""

    family = "conversation"

    def __init__(self):
        self.seen: list[Architecture] = []
        self.prefetched: list = []

    def __call__(self, architecture, data="search", *, on_instance=None):
        if architecture is not None:
            self.seen.append(architecture)
        score = 0.0 if architecture is None else 0.5 + 0.5 * ("entity" in architecture.encode)
        return TrialResult(architecture, "toy", str(data), score)

    def prefetch(self, data, *, encoders=None):
        self.prefetched.append(list(encoders))
        return None


def test_the_space_leaves_the_module_out():
    full = ArchitectureSpace("conversation", lm_available=False)
    less = ArchitectureSpace("conversation", lm_available=False, exclude=["entity"])
    assert "entity" in full.encoders and "entity" not in less.encoders
    assert less.exclude == ("encoder:entity",) and "encoder:entity" in less.excluded
    assert less.count_valid() < full.count_valid()
    assert all("entity" not in a.encode for a in less.enumerate())
    arch = Architecture(("turn", "entity"), "json", "hybrid", "json_full")
    assert not full.violations(arch)
    assert [v.rule for v in less.violations(arch)] == ["left-out"]
    # the same by role and name, in one string, and added to a space later
    assert ArchitectureSpace("conversation", exclude="encoder:entity, store:graph").exclude == (
        "encoder:entity", "store:graph")
    assert full.without(["entity"]).encoders == less.encoders and less.without(["entity"]) is less


@pytest.mark.parametrize("name, says", [("nope", "no module of the conversation family is called 'nope'"),
                                        ("graph", "write store:graph or retriever:graph"),
                                        ("encoder:hybrid", "no encoder of the conversation family"),
                                        ("tip", "no module of the conversation family is called 'tip'")])
def test_a_name_that_is_not_one_module_is_refused(name, says):
    with pytest.raises(MemarchError, match=says):
        ArchitectureSpace("conversation", exclude=[name])


def test_the_warm_start_skips_presets_that_use_it():
    less = ArchitectureSpace("conversation", lm_available=False, exclude=["entity"])
    users = [n for n, a in preset_architectures("conversation").items() if "entity" in a.encode]
    assert users  # the test means something: some presets write entity notes
    for seed in range(6):
        assert all("entity" not in a.encode for a in warm_start_architectures(less, seed, 3))


@pytest.mark.parametrize("strategy", ["guided", "random", "tpe"])
def test_a_compile_never_evaluates_it_and_prefetches_without_it(strategy):
    evaluator = Toy()
    opt = MemarchOptimizer(evaluator, strategy=strategy, budget=8, space_mode="full", exclude=("entity",))
    program = opt.compile("conversation", testset=None)
    assert len({a.key() for a in evaluator.seen}) >= 8
    assert all("entity" not in a.encode for a in evaluator.seen)
    assert "entity" not in program.architecture.encode
    assert "entity" not in opt.study.user_attrs[SPACE_ATTR]["encoders"]
    assert evaluator.prefetched == [["turn", "summary", "fact", "event"]]  # the space's encoders only


def test_without_exclude_the_same_toy_finds_entity():
    evaluator = Toy()
    program = MemarchOptimizer(evaluator, strategy="random", budget=12, prefetch=False).compile(
        "conversation", testset=None)
    assert "entity" in program.architecture.encode  # so the test above can fail


def test_a_student_space_gets_the_settings_exclude_too():
    evaluator = Toy()
    opt = MemarchOptimizer(evaluator, strategy="random", budget=6, exclude="encoder:entity")
    opt.compile(ArchitectureSpace("conversation", lm_available=False), testset=None)
    assert evaluator.seen and all("entity" not in a.encode for a in evaluator.seen)


def test_texts_ahead_lists_only_the_encoders_asked_for():
    from memarch.benchmarks import get_benchmark
    from memarch.modules.encoders.entity import EntityEncoder
    from memarch.pipeline.resources import Resources

    bench = get_benchmark("generated", conversations=1, sessions=2)
    every, fewer = set(texts_ahead(bench, ["search"])), set(texts_ahead(bench, ["search"], encoders=["turn"]))
    entity = {it.text for d in bench.split("search").dialogues for s in d.sessions
              for it in EntityEncoder(Resources()).encode_free(s)}
    assert entity and entity <= every and not entity & fewer and fewer < every


def test_the_cli_names_what_it_left_out_and_refuses_a_bad_name(tmp_path):
    base = [sys.executable, "-m", "memarch", "compile", "--benchmark", "generated", "--embedder", "hash",
            "--budget", "2", "--no-tracking", "--storage", "memory", "--output", str(tmp_path / "p.json")]
    bad = subprocess.run([*base, "--exclude", "tip"], capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().splitlines()[-1] == (
        "memarch: error: cannot leave out 'tip': no module of the conversation family is called 'tip'")
    ok = subprocess.run([*base, "--exclude", "turn"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "left out: encoder:turn" in ok.stdout
    assert "turn" not in json.loads((tmp_path / "p.json").read_text())["architecture"]["encode"]

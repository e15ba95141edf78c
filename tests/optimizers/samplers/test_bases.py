"""The samplers' and proposers' bases: every sampler a strategy builds is one of memarch's
(`MemarchSampler`, its report declared) or one of Optuna's own, read through `report_of` as an empty
report; every sampler class and every proposer class of the package implements its base, so a new
one without the declarations fails here. Nothing probes a sampler or a proposer."""
from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Sequence

import dspy
import optuna
import pytest

import memarch.optimizers.samplers as samplers_package
from memarch.optimizers.samplers.base import MemarchSampler, SamplerReport, report_of
from memarch.optimizers.samplers.guided.lm_proposer import LMProposer
from memarch.optimizers.samplers.guided.proposer import AttributionProposer
from memarch.optimizers.samplers.guided.proposer_base import Proposer
from memarch.optimizers.samplers.guided.sampler import GuidedSampler
from memarch.optimizers.samplers.strategies import STRATEGIES, make_sampler
from memarch.optimizers.search.param_space import ParamSpace

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _package_classes() -> list[type]:
    """Every class defined in a module of memarch.optimizers.samplers (guided/ included)."""
    out = []
    for info in pkgutil.walk_packages(samplers_package.__path__, samplers_package.__name__ + "."):
        module = importlib.import_module(info.name)
        out += [c for c in vars(module).values() if inspect.isclass(c) and c.__module__ == module.__name__]
    return out


def undeclared_samplers(samplers: dict[str, optuna.samplers.BaseSampler]) -> list[str]:
    """The strategies whose sampler is neither one of memarch's (`MemarchSampler`) nor Optuna's own."""
    return sorted(name for name, s in samplers.items()
                  if not isinstance(s, MemarchSampler) and not type(s).__module__.startswith("optuna."))


def _is_declared_proposer(cls: type) -> bool:
    return issubclass(cls, Proposer) and cls.propose is not Proposer.propose


def _check_report(report: SamplerReport) -> None:
    assert isinstance(report.rounds, Sequence)
    stats = report.stats()
    assert isinstance(stats, dict) and all(isinstance(k, str) and isinstance(v, int) for k, v in stats.items())
    assert report.round_of(10 ** 6) is None


def test_every_strategy_builds_a_declared_sampler(space):
    ss = ParamSpace(space)
    built = {name: make_sampler(name, ss, seed=0) for name in STRATEGIES}
    assert not undeclared_samplers(built)
    for name, sampler in built.items():
        report = report_of(sampler)
        _check_report(report)
        if isinstance(sampler, MemarchSampler):
            assert report is sampler
        else:  # one of Optuna's own: nothing to report
            assert (report.rounds, report.stats(), report.round_of(0)) == ((), {}, None), name
    # the strategies memarch wrote are memarch's samplers, with their own counts
    assert {n for n, s in built.items() if isinstance(s, MemarchSampler)} == {"guided", "archive", "bruteforce", "gp", "hybrid"}
    assert report_of(built["gp"]).stats() == {"gp_proposals": 0, "gp_fallback": 0}


def test_the_sampler_check_bites():
    class Undeclared(optuna.samplers.BaseSampler):  # a new sampler of memarch's without the base
        def infer_relative_search_space(self, study, trial):
            return {}

        def sample_relative(self, study, trial, search_space):
            return {}

        def sample_independent(self, study, trial, param_name, param_distribution):
            return None

    assert undeclared_samplers({"new": Undeclared(), "random": optuna.samplers.RandomSampler(0)}) == ["new"]


def test_every_sampler_class_of_the_package_implements_the_base():
    found = [c for c in _package_classes() if issubclass(c, optuna.samplers.BaseSampler)]
    assert {c.__name__ for c in found} >= {"GuidedSampler", "ArchiveSampler", "BruteForceSampler", "GPBaseline"}
    assert [c.__name__ for c in found if not issubclass(c, MemarchSampler) and c is not MemarchSampler] == []


def test_every_proposer_implements_the_base():
    proposers = [c for c in _package_classes() if "propose" in vars(c)]
    assert {c.__name__ for c in proposers} >= {"AttributionProposer", "LMProposer"}
    assert [c.__name__ for c in proposers if not _is_declared_proposer(c) and c is not Proposer] == []
    for p in (AttributionProposer(), LMProposer(dspy.utils.DummyLM([]))):
        assert isinstance(p, Proposer) and isinstance(p.dropped, Sequence)
        assert all(isinstance(n, int) for n in (p.fallbacks, p.repaired, p.repair_failures))
    # the check bites: a proposer that does not implement the base is found
    assert not _is_declared_proposer(type("Undeclared", (), {"propose": lambda self, ctx, k: []}))
    assert not _is_declared_proposer(type("Unimplemented", (Proposer,), {}))


def test_the_guided_sampler_reads_the_attribution_proposers_declared_counts(space):
    """Without an LM the proposer is the attribution one: its counts are the base's, read as declared."""
    sampler = GuidedSampler(ParamSpace(space), seed=0)
    stats = sampler.stats()
    assert isinstance(sampler.planner.proposer, AttributionProposer)
    assert (stats["lm_proposals_repaired"], stats["lm_repair_failures"]) == (0, 0)
    assert sampler.planner.fallback_counts() == (0, 0)


@pytest.mark.parametrize("sampler", [optuna.samplers.RandomSampler(0), optuna.samplers.TPESampler(seed=0)])
def test_an_optuna_sampler_reports_nothing(sampler):
    report = report_of(sampler)
    assert (report.rounds, report.stats(), report.round_of(3)) == ((), {}, None)

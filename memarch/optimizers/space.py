"""`SearchSpace`: the Optuna distributions of one family's architecture space, generated from the
module registry, and the two-way mapping between Optuna params and `Architecture`s.

Encoding of the encoder subset: one boolean categorical per encoder (``encode:tip`` in
{False, True}) rather than one categorical over the 31 subsets. TPE models each parameter
independently, so booleans let it learn "workflow helps" from every trial that contains workflow;
a 31-way categorical shares nothing between {tip, workflow} and {workflow}. The all-False point
(the empty set) is invalid and is pruned, never evaluated (about 1 draw in 32 for five encoders).
Store, retriever and manager are one categorical each.
"""
from __future__ import annotations

from typing import Any

from optuna.distributions import BaseDistribution, CategoricalDistribution

from memarch.pipeline.architecture import Architecture
from memarch.pipeline.space import ArchitectureSpace, Violation

ENCODER_PREFIX = "encode:"


class SearchSpace:
    """The Optuna view of an `ArchitectureSpace`.

    Example::

        space = SearchSpace(ArchitectureSpace("experience", lm_available=False))
        params = space.to_params(Architecture(("tip",), "json", "hybrid", "lightweight"))
        space.from_params(params)            # the same architecture back
        space.distributions()["store"]       # CategoricalDistribution(choices=("json", ...))
    """

    def __init__(self, space: ArchitectureSpace):
        self.space = space

    @classmethod
    def for_family(cls, family: str = "conversation", *, lm_available: bool = False) -> "SearchSpace":
        """The search space of a family (LM-free by default)."""
        return cls(ArchitectureSpace(family, lm_available=lm_available))

    @classmethod
    def of(cls, space: "SearchSpace | ArchitectureSpace | str") -> "SearchSpace":
        """Accept a `SearchSpace`, an `ArchitectureSpace` or a family name."""
        if isinstance(space, SearchSpace):
            return space
        if isinstance(space, ArchitectureSpace):
            return cls(space)
        return cls.for_family(space)

    @property
    def family(self) -> str:
        return self.space.family

    def distributions(self) -> dict[str, BaseDistribution]:
        dists: dict[str, BaseDistribution] = {
            f"{ENCODER_PREFIX}{e}": CategoricalDistribution((False, True)) for e in self.space.encoders}
        dists["store"] = CategoricalDistribution(tuple(self.space.stores))
        dists["retrieve"] = CategoricalDistribution(tuple(self.space.retrievers))
        dists["manage"] = CategoricalDistribution(tuple(self.space.managers))
        return dists

    def to_params(self, arch: Architecture) -> dict[str, Any]:
        """Params for ``study.enqueue_trial``; raises ValueError on names outside the menus, since
        Optuna would reject them only when the trial runs."""
        chosen = set(arch.encode)
        unknown = chosen - set(self.space.encoders)
        if unknown:
            raise ValueError(f"encoder(s) {sorted(unknown)} not in the {self.family} menu")
        params: dict[str, Any] = {f"{ENCODER_PREFIX}{e}": e in chosen for e in self.space.encoders}
        for field, menu in (("store", self.space.stores), ("retrieve", self.space.retrievers),
                            ("manage", self.space.managers)):
            value = getattr(arch, field)
            if value not in menu:
                raise ValueError(f"{field} {value!r} not in the {self.family} menu")
            params[field] = value
        return params

    def from_params(self, params: dict[str, Any]) -> Architecture:
        enc = tuple(e for e in self.space.encoders if params.get(f"{ENCODER_PREFIX}{e}"))
        return Architecture(enc, params["store"], params["retrieve"], params["manage"])

    def suggest(self, trial: Any) -> Architecture:
        """Draw (or read the enqueued) architecture of an Optuna trial; may be invalid."""
        params = {name: trial.suggest_categorical(name, dist.choices)
                  for name, dist in self.distributions().items()}
        return self.from_params(params)

    def violations(self, arch: Architecture) -> list[Violation]:
        return self.space.violations(arch)

    def is_valid(self, arch: Architecture) -> bool:
        return not self.space.violations(arch)

    def params_of(self, trial: Any) -> dict[str, Any] | None:
        """A trial's architecture params: drawn (``params``) or queued (``fixed_params``); None when
        incomplete (a trial still sampling)."""
        params = dict(trial.system_attrs.get("fixed_params", {}))
        params.update(trial.params)
        names = self.distributions()
        return params if all(n in params for n in names) else None

    def keys_in(self, study: Any, *, exclude: int | None = None, failed: bool = True) -> set[str]:
        """Keys of the architectures a study holds — evaluated, running, queued and (``failed``)
        failed — from each trial's params. ``exclude`` skips one trial (the one being sampled)."""
        from optuna.trial import TrialState

        out = set()
        for t in study.get_trials(deepcopy=False):
            if t.number == exclude or t.state == TrialState.PRUNED or (t.state == TrialState.FAIL and not failed):
                continue
            params = self.params_of(t)
            if params is not None:
                out.add(self.from_params(params).canonical().key())
        return out

    def describe(self) -> dict[str, Any]:
        """Stored with a study so that a resumed study can check it searches the same space."""
        return {"family": self.family, "lm_available": self.space.lm_available,
                "encoders": self.space.encoders, "stores": self.space.stores,
                "retrievers": self.space.retrievers, "managers": self.space.managers}

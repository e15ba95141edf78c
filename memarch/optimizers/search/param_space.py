"""`ParamSpace`: the Optuna distributions of one family's architecture space, generated from the
module registry, and the two-way mapping between Optuna params and `Architecture`s.

Encoding of the encoder subset: one boolean categorical per encoder (``encode:tip`` in
{False, True}) rather than one categorical over the 31 subsets. TPE models each parameter
independently, so booleans let it learn "workflow helps" from every trial that contains workflow;
a 31-way categorical shares nothing between {tip, workflow} and {workflow}. The all-False point
(the empty set) is invalid and is pruned, never evaluated (about 1 draw in 32 for five encoders).
Store, retriever and manager are one categorical each.

``mode="full"`` adds each module's numeric knobs (`memarch.pipeline.knobs.Knob`) as conditional
parameters: drawn only in trials that choose the module. One Optuna parameter per (module, knob)
— ``retrieve:hybrid.top_k``, ``manage:lightweight.decay``, ``encode:turn.window`` — since two
modules' knobs of the same name may differ in range and meaning. A knob drawn at its default is
left out of the architecture's ``params``, so a preset queued in the full space is the preset.

``levels`` (full mode) narrows the knobs to a few named ones at a few values each — the space of a
landscape built with levers (`memarch.optimizers.landscapes.levers`): ``{"retrieve.pack": (0, 1)}``
makes one categorical parameter per (module, knob) over those values, and coordinate steps move
between neighbouring levels.
"""
from __future__ import annotations

from typing import Any

from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution

from memarch.errors import MemarchError
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.knobs import Knob
from memarch.pipeline.space import ArchitectureSpace, Violation, param_key

ENCODER_PREFIX = "encode:"
MODES = ("categorical", "full")
_FIELD = {"store": "store", "retriever": "retrieve", "manager": "manage"}


class ParamSpace:
    """The Optuna view of an `ArchitectureSpace`.

    Example::

        space = ParamSpace(ArchitectureSpace("experience", lm_available=False))
        params = space.to_params(Architecture(("tip",), "json", "hybrid", "lightweight"))
        space.from_params(params)            # the same architecture back
        space.distributions()["store"]       # CategoricalDistribution(choices=("json", ...))
        full = ParamSpace(space.space, mode="full")
        full.knob_distributions()["retrieve:hybrid.top_k"]  # IntDistribution(2, 64, log=True)

    Args:
        space: the `ArchitectureSpace`.
        mode: ``categorical`` (the method's space, default) or ``full`` (plus numeric knobs).
        defaults: knob defaults known only to the caller, by param key (``{"retrieve.top_k": 20}``:
            the evaluation's items per read); else each knob's declared (family) default, and
            ``top_k`` B/10 of the default budget.
        levels: full mode with only these knobs, each at these values (sorted, the default among
            them), by param key: ``{"retrieve.pack": (0, 1), "retrieve.time_weight": (0.0, 1.0)}``.
    """

    def __init__(self, space: ArchitectureSpace, mode: str = "categorical", *,
                 defaults: dict[str, float | int] | None = None,
                 levels: dict[str, Any] | None = None):
        if mode not in MODES:
            raise MemarchError(f"unknown search space {mode!r}; expected one of {', '.join(MODES)}")
        if levels and mode != "full":
            raise MemarchError("knob levels need the full search space")
        self.space = space
        self.mode = mode
        self.defaults = dict(defaults or {})
        self.levels: dict[str, tuple] | None = None
        if levels:
            self.levels = dict(levels)  # narrows knob_table, then each is checked and coerced
            self.levels = self._checked_levels()

    def _checked_levels(self) -> dict[str, tuple]:
        """The levels, each sorted in its knob's type; one clear error for a knob no module declares,
        a value out of range, or levels without the knob's default."""
        assert self.levels is not None
        declared = {key: knob for _, _, _, key, knob in self.knob_table()}
        out = {}
        for key, values in self.levels.items():
            knob = declared.get(key)
            if knob is None:
                raise MemarchError(f"knob {key} is not declared by any module of the {self.family} space")
            for v in values:
                wrong = knob.check(v)
                if wrong:
                    raise MemarchError(f"knob {key} {wrong}")
            out[key] = tuple(sorted({knob.coerce(v) for v in values}))
            if knob.coerce(self.default(key, knob)) not in out[key]:
                raise MemarchError(f"knob {key}: its levels {list(values)} must include its default "
                                   f"{self.default(key, knob)} (the architecture as it is)")
        return out

    @classmethod
    def for_family(cls, family: str = "conversation", *, lm_available: bool = False,
                   mode: str = "categorical") -> "ParamSpace":
        """The search space of a family (LM-free by default)."""
        return cls(ArchitectureSpace(family, lm_available=lm_available), mode)

    @classmethod
    def of(cls, space: "ParamSpace | ArchitectureSpace | str") -> "ParamSpace":
        """Accept a `ParamSpace`, an `ArchitectureSpace` or a family name."""
        if isinstance(space, ParamSpace):
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

    # -- knobs (full mode) ---------------------------------------------------------------------------
    def knob_table(self) -> list[tuple[str, str, str, str, Knob]]:
        """``(optuna name, field, module, param key, Knob)`` of every menu module's knobs; empty in
        categorical mode."""
        if self.mode != "full":
            return []
        memo = self.__dict__.get("_knobs")
        if memo is None:
            memo = []
            menus = [("encoder", self.space.encoders), ("store", self.space.stores),
                     ("retriever", self.space.retrievers), ("manager", self.space.managers)]
            for role, names in menus:
                for name in names:
                    for knob in self.space.spec(role, name).knobs:
                        key = param_key(role, name, knob.name)
                        field = f"{ENCODER_PREFIX}{name}" if role == "encoder" else _FIELD[role]
                        optuna_name = key if role == "encoder" else f"{field}:{name}.{knob.name}"
                        memo.append((optuna_name, field, name, key, knob))
            if self.levels:
                memo = [row for row in memo if row[3] in self.levels]
            self.__dict__["_knobs"] = memo
        return memo

    def knob_steps(self, key: str, knob: Knob, value: float | int) -> list[float | int]:
        """Values one coordinate step from ``value``: the neighbouring levels when the space has
        levels, else `steps` (x2, /2 or +-1/4 of the range)."""
        if self.levels and key in self.levels:
            values = self.levels[key]
            below = [v for v in values if v < value]
            above = [v for v in values if v > value]
            return ([above[0]] if above else []) + ([below[-1]] if below else [])
        return steps(knob, value)

    def knob_distributions(self) -> dict[str, BaseDistribution]:
        out: dict[str, BaseDistribution] = {}
        for name, _, _, key, knob in self.knob_table():
            if self.levels:
                out[name] = CategoricalDistribution(self.levels[key])
            elif knob.kind == "int":
                out[name] = IntDistribution(int(knob.low), int(knob.high), log=knob.log)
            else:
                out[name] = FloatDistribution(float(knob.low), float(knob.high), log=knob.log)
        return out

    def all_distributions(self) -> dict[str, BaseDistribution]:
        """Categorical and (full mode) knob distributions: a relative sampler's search space."""
        return {**self.distributions(), **self.knob_distributions()}

    def default(self, key: str, knob: Knob) -> float | int:
        """A knob's value when the architecture does not set it."""
        if key in self.defaults:
            return knob.coerce(self.defaults[key])
        value = knob.default_for(self.family)
        if value is None and knob.name == "top_k":
            from memarch.benchmarks.evaluation.settings import default_top_k
            from memarch.pipeline.retrieval import DEFAULT_CONTEXT_BUDGET

            value = default_top_k(DEFAULT_CONTEXT_BUDGET)
        if value is None:
            raise MemarchError(f"knob {key} has no default in the {self.family} space")
        return knob.coerce(value)

    def chosen_knobs(self, params: dict[str, Any]) -> list[tuple[str, str, Knob]]:
        """(optuna name, param key, Knob) of the knobs of the modules ``params`` chooses."""
        out = []
        for name, field, module, key, knob in self.knob_table():
            chosen = params.get(field) is True if field.startswith(ENCODER_PREFIX) else params.get(field) == module
            if chosen:
                out.append((name, key, knob))
        return out

    def to_params(self, arch: Architecture) -> dict[str, Any]:
        """Params for ``study.enqueue_trial``; raises ValueError on names outside the menus, since
        Optuna would reject them only when the trial runs. In full mode every knob of the chosen
        modules gets a value (the architecture's, else the default); the categorical space cannot
        hold knob values and raises ValueError for an architecture that sets some."""
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
        if arch.params and self.mode != "full":
            raise ValueError(f"{arch.key()} sets knobs; the categorical space has none (use the full space)")
        chosen = self.chosen_knobs(params)
        unknown = set(arch.param_dict) - {key for _, key, _ in chosen}
        if unknown:
            raise ValueError(f"knob(s) {sorted(unknown)} not declared by the modules of {arch.key()}")
        for name, key, knob in chosen:
            params[name] = knob.coerce(arch.param_dict.get(key, self.default(key, knob)))
        return params

    def from_params(self, params: dict[str, Any]) -> Architecture:
        enc = tuple(e for e in self.space.encoders if params.get(f"{ENCODER_PREFIX}{e}"))
        knobs = {}
        for name, key, knob in self.chosen_knobs(params):
            if name in params:
                value = knob.coerce(params[name])
                value = round(value, 6) if isinstance(value, float) else value  # as Architecture keeps it
                if value != self.default(key, knob):
                    knobs[key] = value
        return Architecture(enc, params["store"], params["retrieve"], params["manage"], params=knobs)

    def suggest(self, trial: Any) -> Architecture:
        """Draw (or read the enqueued) architecture of an Optuna trial; may be invalid. In full
        mode the knobs of the chosen modules are drawn after the categorical choices."""
        params = {name: trial.suggest_categorical(name, dist.choices)
                  for name, dist in self.distributions().items()}
        for name, key, knob in self.chosen_knobs(params):
            if self.levels:
                params[name] = trial.suggest_categorical(name, self.levels[key])
            elif knob.kind == "int":
                params[name] = trial.suggest_int(name, int(knob.low), int(knob.high), log=knob.log)
            else:
                params[name] = trial.suggest_float(name, float(knob.low), float(knob.high), log=knob.log)
        return self.from_params(params)

    def violations(self, arch: Architecture) -> list[Violation]:
        return self.space.violations(arch)

    def is_valid(self, arch: Architecture) -> bool:
        return not self.space.violations(arch)

    def params_of(self, trial: Any) -> dict[str, Any] | None:
        """A trial's architecture params: drawn (``params``) or queued (``fixed_params``); None when
        incomplete (a trial still sampling; complete = every categorical param, knobs may follow)."""
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
        """Stored with a study so that a resumed study can check it searches the same space (the
        categorical description is what it was before the full space existed)."""
        out = {"family": self.family, "lm_available": self.space.lm_available,
               "encoders": self.space.encoders, "stores": self.space.stores,
               "retrievers": self.space.retrievers, "managers": self.space.managers}
        if self.mode == "full":
            out["mode"] = "full"
            out["knobs"] = {name: [knob.kind, knob.low, knob.high, knob.log, self.default(key, knob)]
                            for name, _, _, key, knob in self.knob_table()}
            if self.levels:
                out["levels"] = {key: list(values) for key, values in self.levels.items()}
        return out


def steps(knob: Knob, value: float | int) -> list[float | int]:
    """The values one coordinate step away: x2 and /2 on a log scale, +-1/4 of the range otherwise;
    clamped, rounded for int knobs (at least one unit: a narrow int knob such as ``pack`` 0-2 would
    round back to its value), without the current value."""
    if knob.log:
        cands = [value * 2, value / 2]
    else:
        width = (knob.high - knob.low) / 4
        cands = [value + width, value - width]
    out = []
    for c, sign in zip(cands, (1, -1)):
        c = min(knob.high, max(knob.low, c))
        if knob.kind == "int":
            c = int(round(c))
            if c == value:
                c = int(min(knob.high, max(knob.low, value + sign)))
        else:
            c = round(float(c), 4)
        if c != value and c not in out:
            out.append(c)
    return out

"""`ArchitectureSpace`: the E x S x R x M space of one family, derived from the module registry —
its size, its validity rules, enumeration, validation that names the broken rule, and repair."""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Iterable, Iterator

from memarch.errors import ArchitectureError
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.knobs import Knob
from memarch.pipeline.registry import FAMILIES, REGISTRY, ModuleSpec, Registry


@dataclass(frozen=True)
class Violation:
    rule: str
    message: str

    def __str__(self) -> str:
        return f"[{self.rule}] {self.message}"


# The rules, each derived from declared capabilities (see ModuleSpec).
RULES = {
    "encode-nonempty": "encode is a non-empty set of encoders",
    "encode-unique": "encode has no duplicates",
    "known-names": "every name is a registered module of the family's menu",
    "retriever-store": "a retriever's required store capabilities are provided by the store "
                       "(graph retriever -> graph-family store)",
    "manager-store": "a manager's required store capabilities are provided by the store "
                     "(graph_consolidate -> graph-family store)",
    "manager-retriever": "a manager that requires specific retrievers is paired with one of them "
                         "(graph_consolidate -> graph retriever)",
    "lm-required": "modules that cannot run without an LM need an LM",
    "left-out": "modules the space was told to leave out (``exclude``, ``--exclude``) are not in it",
    "knob-known": "every knob in params is declared by a module the architecture chooses "
                  "(\"<field>.<knob>\", field encode:<encoder> / store / retrieve / manage)",
    "knob-value": "every knob value has the knob's type and lies in its declared range",
}


def param_key(role: str, module: str, knob: str) -> str:
    """``"retrieve.top_k"``, ``"encode:turn.window"``: where a knob sits in `Architecture.params`."""
    field = f"encode:{module}" if role == "encoder" else {"store": "store", "retriever": "retrieve",
                                                           "manager": "manage"}[role]
    return f"{field}.{knob}"


def resolve_modules(registry: Registry, family: str, names: Iterable[str]) -> tuple[str, ...]:
    """``"entity"`` / ``"encoder:entity"`` / ``"entity,graph"`` -> ``("encoder:entity", ...)``: each
    a module of ``family``'s menus; a bare name must name one role's module (else the error says
    which roles to choose from)."""
    if isinstance(names, str):
        names = [names]
    roles = ("encoder", "store", "retriever", "manager")
    out: list[str] = []
    for name in (n.strip() for text in names for n in str(text).split(",")):
        if not name:
            continue
        role, _, module = name.rpartition(":")
        found = [r for r in (roles if not role else (role,)) if r in roles and module in registry.names(r, family)]
        if len(found) != 1:
            why = (f"it names a {' and a '.join(found)}: write {' or '.join(f'{r}:{module}' for r in found)}"
                   if found else
                   f"no {role or 'module'} of the {family} family is called {module!r}")
            raise ArchitectureError(f"cannot leave out {name!r}: {why}", rule="known-names")
        out.append(f"{found[0]}:{module}")
    return tuple(dict.fromkeys(out))


class ArchitectureSpace:
    """The space of one family. With ``lm_available=False`` the modules that need an LM drop out;
    ``exclude`` leaves out modules by name (``"entity"``, or ``"encoder:entity"`` where a name is
    ambiguous): a module a user cannot afford or deploy is neither searched nor valid here.

    Example::

        space = ArchitectureSpace("experience")
        space.total(), space.count_valid()   # (3720, 2573)
        ArchitectureSpace("conversation", exclude=["entity"]).encoders   # every encoder but entity
    """

    def __init__(self, family: str = "experience", *, lm_available: bool = True,
                 registry: Registry = REGISTRY, opt_in: bool = False, exclude: Iterable[str] = ()):
        if family not in FAMILIES:
            raise ArchitectureError(f"unknown family {family!r}; expected one of {', '.join(FAMILIES)}",
                                    rule="known-names")
        self.family = family
        self.lm_available = lm_available
        self.registry = registry
        self.excluded: dict[str, str] = {}
        self.opt_in = opt_in
        self.left_out: list[str] = []  # opt-in modules not searched here (still valid to evaluate)
        self.exclude = resolve_modules(registry, family, exclude)  # ("encoder:entity", ...)
        self._specs: dict[str, list[ModuleSpec]] = {}
        for role in ("encoder", "store", "retriever", "manager"):
            kept = []
            for spec in registry.specs(role, family):
                if f"{role}:{spec.name}" in self.exclude:
                    self.excluded[f"{role}:{spec.name}"] = f"{role} {spec.name!r} is left out (exclude)"
                elif spec.opt_in and not opt_in:
                    self.left_out.append(f"{role}:{spec.name}")
                elif spec.needs_lm and not lm_available:
                    self.excluded[f"{role}:{spec.name}"] = f"{role} {spec.name!r} needs an LM and none is configured"
                else:
                    kept.append(spec)
            self._specs[role] = kept

    def without(self, exclude: Iterable[str]) -> "ArchitectureSpace":
        """This space less the modules in ``exclude`` (itself when there are none)."""
        extra = resolve_modules(self.registry, self.family, exclude)
        if set(extra) <= set(self.exclude):
            return self
        return ArchitectureSpace(self.family, lm_available=self.lm_available, registry=self.registry,
                                 opt_in=self.opt_in, exclude=self.exclude + extra)

    # -- menus ------------------------------------------------------------------------------------
    @property
    def encoders(self) -> list[str]:
        return [s.name for s in self._specs["encoder"]]

    @property
    def stores(self) -> list[str]:
        return [s.name for s in self._specs["store"]]

    @property
    def retrievers(self) -> list[str]:
        return [s.name for s in self._specs["retriever"]]

    @property
    def managers(self) -> list[str]:
        return [s.name for s in self._specs["manager"]]

    def spec(self, role: str, name: str) -> ModuleSpec:
        return self.registry.get(role, name)

    # -- counting and enumeration ----------------------------------------------------------------
    def encoder_subsets(self) -> list[tuple[str, ...]]:
        enc = self.encoders
        return [c for r in range(1, len(enc) + 1) for c in itertools.combinations(enc, r)]

    def total(self) -> int:
        return (2 ** len(self.encoders) - 1) * len(self.stores) * len(self.retrievers) * len(self.managers)

    def triples(self, *, valid_only: bool = True) -> list[tuple[str, str, str]]:
        memo = self.__dict__.setdefault("_triples", {})
        if valid_only in memo:
            return list(memo[valid_only])
        out = []
        for s, r, m in itertools.product(self.stores, self.retrievers, self.managers):
            if not valid_only or not self._triple_violations(s, r, m):
                out.append((s, r, m))
        memo[valid_only] = tuple(out)
        return out

    def count_valid(self) -> int:
        return len(self.triples()) * len(self.encoder_subsets())

    def enumerate(self, *, valid_only: bool = True) -> Iterator[Architecture]:
        triples = self.triples(valid_only=valid_only)
        for enc in self.encoder_subsets():
            for s, r, m in triples:
                yield Architecture(enc, s, r, m)

    # -- validity ---------------------------------------------------------------------------------
    def _triple_violations(self, store: str, retrieve: str, manage: str) -> list[Violation]:
        out: list[Violation] = []
        s = self.registry.get("store", store)
        r = self.registry.get("retriever", retrieve)
        m = self.registry.get("manager", manage)
        if not r.requires_store <= s.provides:
            out.append(Violation("retriever-store", f"retriever {retrieve!r} needs a store with "
                                 f"{'/'.join(sorted(r.requires_store))} capability; store {store!r} has none"))
        if not m.requires_store <= s.provides:
            out.append(Violation("manager-store", f"manager {manage!r} needs a store with "
                                 f"{'/'.join(sorted(m.requires_store))} capability; store {store!r} has none"))
        if m.requires_retriever and retrieve not in m.requires_retriever:
            out.append(Violation("manager-retriever", f"manager {manage!r} needs retriever "
                                 f"{' or '.join(sorted(m.requires_retriever))}, not {retrieve!r}"))
        return out

    def violations(self, arch: Architecture) -> list[Violation]:
        out: list[Violation] = []
        if not arch.encode:
            out.append(Violation("encode-nonempty", "encode must name at least one encoder"))
        dups = sorted({e for e in arch.encode if arch.encode.count(e) > 1})
        if dups:
            out.append(Violation("encode-unique", f"duplicate encoder(s): {', '.join(dups)}"))
        menus = {"encoder": self.registry.names("encoder", self.family),
                 "store": self.registry.names("store", self.family),
                 "retriever": self.registry.names("retriever", self.family),
                 "manager": self.registry.names("manager", self.family)}
        names = [("encoder", e) for e in arch.encode] + [
            ("store", arch.store), ("retriever", arch.retrieve), ("manager", arch.manage)]
        unknown = False
        for role, name in names:
            if name not in menus[role]:
                unknown = True
                other = self.registry.family_of_encoder(name) if role == "encoder" else None
                hint = f" (it belongs to the {other!r} family)" if other else f"; known: {', '.join(menus[role])}"
                out.append(Violation("known-names", f"{role} {name!r} is not in the {self.family} menu{hint}"))
        if unknown:
            return out
        out.extend(self._triple_violations(arch.store, arch.retrieve, arch.manage))
        out.extend(self._knob_violations(arch))
        if not self.lm_available:
            for role, name in names:
                if self.registry.get(role, name).needs_lm:
                    out.append(Violation("lm-required", f"{role} {name!r} needs an LM and none is configured"))
        out.extend(Violation("left-out", f"{role} {name!r} is left out of this space (exclude)")
                   for role, name in names if f"{role}:{name}" in self.exclude)
        return out

    # -- knobs ------------------------------------------------------------------------------------
    def knobs_of(self, arch: Architecture) -> dict[str, tuple[str, str, Knob]]:
        """``param key -> (role, module, Knob)`` for every knob of the modules ``arch`` chooses."""
        out: dict[str, tuple[str, str, Knob]] = {}
        for role, name in [("encoder", e) for e in dict.fromkeys(arch.encode)] + [
                ("store", arch.store), ("retriever", arch.retrieve), ("manager", arch.manage)]:
            for knob in self.registry.get(role, name).knobs:
                out[param_key(role, name, knob.name)] = (role, name, knob)
        return out

    def _knob_violations(self, arch: Architecture) -> list[Violation]:
        if not arch.params:
            return []
        knobs = self.knobs_of(arch)
        out = []
        for key, value in arch.params:
            if key not in knobs:
                field, _, knob = key.rpartition(".")
                hint = ", ".join(k for k in knobs if k.startswith(f"{field}.")) or "none"
                out.append(Violation("knob-known", f"params {key!r}: no knob {knob!r} on the module chosen "
                                     f"for {field or key!r} (its knobs: {hint})"))
                continue
            problem = knobs[key][2].check(value)
            if problem:
                out.append(Violation("knob-value", f"params {key!r} {problem}"))
        return out

    def fit_params(self, arch: Architecture) -> Architecture:
        """``arch`` keeping only the params its chosen modules declare (after an edit swapped a module)."""
        if not arch.params:
            return arch
        knobs = self.knobs_of(arch)
        kept = {k: v for k, v in arch.params if k in knobs}
        return arch if len(kept) == len(arch.params) else arch.replace(params=kept)

    def is_valid(self, arch: Architecture) -> bool:
        # Memoised by the exact tuple (order and duplicates matter to the rules): searches ask often.
        memo = self.__dict__.setdefault("_valid", {})
        key = (arch.encode, arch.store, arch.retrieve, arch.manage, arch.params)
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = not self.violations(arch)
        return hit

    def validate(self, arch: Architecture) -> Architecture:
        """Return ``arch`` unchanged, or raise ArchitectureError naming the first broken rule."""
        v = self.violations(arch)
        if v:
            raise ArchitectureError(f"invalid architecture {arch.key()}: {v[0]}", rule=v[0].rule)
        return arch

    def repair(self, arch: Architecture) -> Architecture:
        """The nearest valid architecture: fewest changed fields, encoders kept where possible.

        Distance: symmetric difference of the encoder sets plus one per changed store / retriever /
        manager; ties go to the registry order, so repair is deterministic. Knob values of the
        modules kept stay when valid; the others are dropped (the module default).
        """
        if self.is_valid(arch):
            return arch.canonical()
        keep = [e for e in dict.fromkeys(arch.encode) if e in self.encoders]
        enc = tuple(e for e in self.encoders if e in keep) or (self.encoders[0],)
        best, best_d = None, None
        for s, r, m in self.triples():
            d = (s != arch.store) + (r != arch.retrieve) + (m != arch.manage)
            if best_d is None or d < best_d:
                best, best_d = (s, r, m), d
        if best is None:
            raise ArchitectureError(f"the {self.family} space has no valid architecture", rule="known-names")
        fixed = self.fit_params(Architecture(enc, *best, params=arch.params))
        knobs = self.knobs_of(fixed)
        return fixed.replace(params={k: v for k, v in fixed.params if not knobs[k][2].check(v)})

    # -- description ------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        full = ArchitectureSpace(self.family, lm_available=True, registry=self.registry, opt_in=self.opt_in)
        free = ArchitectureSpace(self.family, lm_available=False, registry=self.registry, opt_in=self.opt_in)
        return {
            "family": self.family,
            "total": full.total(),
            "valid": full.count_valid(),
            "valid_without_lm": free.count_valid(),
            "excluded": dict(free.excluded),
            "opt_in_left_out": list(full.left_out),  # valid to evaluate, searched only with opt_in
            "rules": dict(RULES),
            "modules": {
                role: [full.spec(role, n).capabilities() for n in getattr(full, attr)]
                for role, attr in (("encoder", "encoders"), ("store", "stores"),
                                   ("retriever", "retrievers"), ("manager", "managers"))
            },
            "valid_triples": len(full.triples()),
            "valid_triples_without_lm": len(free.triples()),
        }

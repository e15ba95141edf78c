"""The module registry: one decorated class per module; the search space and its validity rules
are derived from the capabilities declared here, never from a hand-written list of combinations.

Example::

    @register("retriever", "mmr", needs_embeddings=True, description="dense recall + MMR")
    class MMRRetriever(Retriever): ...
"""
from __future__ import annotations

import contextlib
import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from memarch.pipeline.knobs import Knob

ROLES = ("encoder", "store", "retriever", "manager")
FAMILIES = ("experience", "conversation")
# The architecture field each role fills.
ROLE_FIELD = {"encoder": "encode", "store": "store", "retriever": "retrieve", "manager": "manage"}


@dataclass(frozen=True)
class ModuleSpec:
    """What a module declares about itself; the space reads only this. ``source``
    (``"module:qualname"``) names the class: `cls` imports it on first use when the spec was read
    from the registry's manifest (`memarch.modules.manifest`) rather than registered by the class."""

    role: str
    name: str
    source: str
    families: tuple[str, ...] = FAMILIES
    needs_lm: bool = False  # cannot run at all without an LM (drops out of the LM-free space)
    uses_lm: bool = False  # uses an LM when one is configured, has a real LM-free path otherwise
    needs_embeddings: bool = False
    provides: frozenset[str] = frozenset()  # capability tags a store offers, e.g. {"graph"}
    requires_store: frozenset[str] = frozenset()  # tags the chosen store must provide
    requires_retriever: frozenset[str] = frozenset()  # allowed retrievers (empty: any)
    description: str = ""
    order: int = 0
    knobs: tuple[Knob, ...] = ()  # numeric hyperparameters the full search space tunes
    # Outside the AutoMem menu (its 3720 tuples): valid in an architecture, searched only in a space
    # built with ``opt_in`` (a benchmark whose agent uses it, e.g. note taking on TextWorldExpress).
    opt_in: bool = False
    _cls: type | None = field(default=None, compare=False, repr=False)

    @property
    def cls(self) -> type:
        if self._cls is None:
            module, _, qualname = self.source.partition(":")
            obj: Any = importlib.import_module(module)
            for part in qualname.split("."):
                obj = getattr(obj, part)
            object.__setattr__(self, "_cls", obj)
        return self._cls  # type: ignore[return-value]

    def knob(self, name: str) -> Knob | None:
        return next((k for k in self.knobs if k.name == name), None)

    def capabilities(self) -> dict:
        return {
            "role": self.role, "name": self.name, "families": list(self.families),
            "needs_lm": self.needs_lm, "uses_lm": self.uses_lm,
            "needs_embeddings": self.needs_embeddings, "provides": sorted(self.provides),
            "requires_store": sorted(self.requires_store),
            "requires_retriever": sorted(self.requires_retriever), "description": self.description,
            "knobs": [k.to_dict() for k in self.knobs], "opt_in": self.opt_in,
        }

    def declaration(self) -> dict:
        """Everything the spec declares, as JSON data (`from_declaration` reads it back)."""
        return {**self.capabilities(), "source": self.source, "order": self.order}

    @classmethod
    def from_declaration(cls, d: dict) -> "ModuleSpec":
        return cls(
            role=d["role"], name=d["name"], source=d["source"], families=tuple(d["families"]),
            needs_lm=d["needs_lm"], uses_lm=d["uses_lm"], needs_embeddings=d["needs_embeddings"],
            provides=frozenset(d["provides"]), requires_store=frozenset(d["requires_store"]),
            requires_retriever=frozenset(d["requires_retriever"]), description=d["description"],
            order=d["order"], knobs=tuple(Knob.from_dict(k) for k in d["knobs"]), opt_in=d["opt_in"],
        )


@dataclass
class Registry:
    """Every module's `ModuleSpec`, by role and name. Where the modules come from is not this
    layer's to know: a package above adds a loader (`add_loader`; the `memarch` package adds the
    built-in modules'), run once before the first query that needs every module."""

    _specs: dict[tuple[str, str], ModuleSpec] = field(default_factory=dict)
    _counter: int = 0
    declared: bool = False  # the built-in modules' specs came from the manifest (see `declare`)
    loaded: bool = False  # the loaders ran
    _loaders: list[Callable[[], None]] = field(default_factory=list)

    def register(
        self,
        role: str,
        name: str,
        *,
        families: tuple[str, ...] | str = FAMILIES,
        needs_lm: bool = False,
        uses_lm: bool = False,
        needs_embeddings: bool = False,
        provides: tuple[str, ...] = (),
        requires_store: tuple[str, ...] = (),
        requires_retriever: tuple[str, ...] = (),
        description: str | None = None,
        rank: int | None = None,
        knobs: tuple[Knob, ...] = (),
        opt_in: bool = False,
    ) -> Callable[[type], type]:
        """Register a module class. ``rank`` fixes its place in menus (default: registration order);
        ``knobs`` are its numeric hyperparameters (see `Knob`); ``opt_in`` keeps it out of the
        search menus unless a space asks for opt-in modules."""
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; expected one of {ROLES}")
        fams = (families,) if isinstance(families, str) else tuple(families)
        for fam in fams:
            if fam not in FAMILIES:
                raise ValueError(f"unknown family {fam!r}; expected one of {FAMILIES}")
        names = [k.name for k in knobs]
        if len(set(names)) != len(names):
            raise ValueError(f"{role} {name!r}: duplicate knob names {names}")

        def decorate(cls: type) -> type:
            key = (role, name)
            old = self._specs.get(key)
            # By name, not `old.cls`: a declared spec's class may be the one being imported now.
            old_qualname = old.source.partition(":")[2] if old is not None else None
            if old is not None and old_qualname != cls.__qualname__:
                raise ValueError(f"{role} {name!r} is already registered by {old_qualname}")
            self._counter += 1
            doc = (cls.__doc__ or "").strip().splitlines()
            spec = ModuleSpec(
                role=role, name=name, source=f"{cls.__module__}:{cls.__qualname__}", _cls=cls,
                families=fams, needs_lm=needs_lm,
                uses_lm=uses_lm or needs_lm, needs_embeddings=needs_embeddings,
                provides=frozenset(provides), requires_store=frozenset(requires_store),
                requires_retriever=frozenset(requires_retriever),
                description=description or (doc[0] if doc else ""),
                order=old.order if old else (rank if rank is not None else 1000 + self._counter),
                knobs=tuple(knobs), opt_in=opt_in,
            )
            self._specs[key] = spec
            cls.name = name
            cls.role = role
            cls.spec = spec
            return cls

        return decorate

    def declare(self, specs: Iterable[ModuleSpec]) -> None:
        """Take the built-in modules' specs read from the manifest (`memarch.modules.manifest`)
        instead of importing their files; a module registered already keeps its own spec. Queries
        then answer from these specs, and a spec's class is imported when first asked for."""
        specs = list(specs)
        for spec in specs:
            self._specs.setdefault((spec.role, spec.name), spec)
        # A module registered later takes its menu place after every declared one, as after an import.
        self._counter = max([self._counter, *(s.order - 1000 for s in specs)]) + 1
        self.declared = True

    def add_loader(self, load: Callable[[], None]) -> None:
        """``load()`` imports (and so registers) modules; it runs once, on the first query that
        needs every module, unless their specs were declared from a manifest first."""
        self._loaders.append(load)

    def load(self) -> None:
        """Run the loaders (once): every module they know is registered afterwards."""
        if not self.loaded:
            self.loaded = True
            for load in list(self._loaders):
                load()

    def _ensure_specs(self) -> None:
        if not self.declared:
            self.load()

    def unregister(self, role: str, name: str) -> None:
        self._specs.pop((role, name), None)
        self._counter += 1

    def version(self) -> tuple[int, int, int]:
        """Changes whenever the registered modules may have: registrations, removals, or the specs
        dict replaced (``temporarily``, tests). Memoised derived values (architecture keys) check it."""
        return (id(self._specs), len(self._specs), self._counter)

    @contextlib.contextmanager
    def temporarily(self) -> Iterator["Registry"]:
        """Registrations made inside the block are undone after it (used by tests)."""
        saved = dict(self._specs)
        try:
            yield self
        finally:
            self._specs = saved

    def get(self, role: str, name: str) -> ModuleSpec:
        self._ensure_specs()
        try:
            return self._specs[(role, name)]
        except KeyError:
            from memarch.errors import ArchitectureError

            known = ", ".join(self.names(role)) or "none"
            raise ArchitectureError(f"unknown {role} {name!r} (known: {known})", rule="known-names") from None

    def specs(self, role: str, family: str | None = None) -> list[ModuleSpec]:
        self._ensure_specs()
        out = [s for (r, _), s in self._specs.items() if r == role and (family is None or family in s.families)]
        return sorted(out, key=lambda s: s.order)

    def names(self, role: str, family: str | None = None) -> list[str]:
        return [s.name for s in self.specs(role, family)]

    def family_of_encoder(self, name: str) -> str | None:
        self._ensure_specs()
        spec = self._specs.get(("encoder", name))
        return spec.families[0] if spec else None


REGISTRY = Registry()
register = REGISTRY.register


def ensure_modules_loaded() -> None:
    """Register every module the registry's loaders know (the built-in ones: `memarch.modules.load`)."""
    REGISTRY.load()

"""`Settings`: the base of memarch's frozen settings objects (how an evaluation reads and scores, how
a search runs): ``replace`` by name, where an unknown name is one `TypeError` listing the known ones,
and ``of`` (a settings object, or the defaults, with changes by name)."""
from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, TypeVar

S = TypeVar("S", bound="Settings")


class Settings:
    """Mixin of a frozen dataclass of settings. ``what`` names them in errors ("search setting")."""

    what: ClassVar[str] = "setting"

    def replace(self: S, **changes: Any) -> S:
        """A copy with ``changes`` (validated as a new instance is)."""
        names = [f.name for f in dataclasses.fields(self)]  # type: ignore[arg-type]
        unknown = sorted(set(changes) - set(names))
        if unknown:
            raise TypeError(f"unknown {self.what} {unknown[0]!r}; expected one of {', '.join(names)}")
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    @classmethod
    def of(cls: type[S], settings: S | None = None, **changes: Any) -> S:
        """``settings`` (default: the defaults) with ``changes`` by name: what a function that
        takes a settings object and keywords by name (``budget=20``) runs with."""
        if settings is not None and not isinstance(settings, cls):
            raise TypeError(f"expected {cls.__name__}, not {type(settings).__name__} (give its {cls.what}s "
                            f"by name)")
        base = settings if settings is not None else cls()
        return base.replace(**changes) if changes else base

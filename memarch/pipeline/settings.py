"""`Settings`: the base of memarch's frozen settings objects (how an evaluation reads and scores, how
a search runs): ``replace`` by name, where an unknown name is one `TypeError` listing the known ones."""
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

"""`Architecture`: one point (encoders, store, retriever, manager) of the memory-architecture space,
with its JSON form ``{"schema_version":"1","encode":[...],"store":..,"retrieve":..,"manage":..}``
and optional numeric knob values ``"params": {"retrieve.top_k": 8, "encode:turn.window": 4}``."""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from memarch.errors import ArchitectureError

SCHEMA_VERSION = "1"
FIELDS = ("schema_version", "encode", "store", "retrieve", "manage")
OPTIONAL_FIELDS = ("params",)


@dataclass(frozen=True)
class Architecture:
    """A memory architecture. ``encode`` keeps the order given; :meth:`canonical` sorts it.

    ``params`` sets module knobs (see `memarch.pipeline.knobs.Knob`), keyed ``"<field>.<knob>"``
    with field ``encode:<encoder>``, ``store``, ``retrieve`` or ``manage``; given as a dict or
    pairs, kept as sorted pairs (hashable), read as a dict through :attr:`param_dict`. Knobs not
    set keep the module's default; `ArchitectureSpace` checks names, types and ranges.

    Example::

        Architecture(("turn",), "vector", "hybrid", "lightweight", params={"retrieve.top_k": 8}).key()
        # 'turn|vector|hybrid|lightweight|retrieve.top_k=8'
    """

    encode: tuple[str, ...]
    store: str
    retrieve: str
    manage: str
    params: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.encode, str):
            object.__setattr__(self, "encode", (self.encode,))
        else:
            object.__setattr__(self, "encode", tuple(self.encode))
        pairs = self.params.items() if isinstance(self.params, dict) else self.params
        object.__setattr__(self, "params", tuple(sorted((str(k), _number(v)) for k, v in pairs)))

    @property
    def param_dict(self) -> dict[str, Any]:
        return dict(self.params)

    def without_params(self) -> "Architecture":
        return self if not self.params else replace(self, params=())

    # -- JSON -----------------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Any) -> "Architecture":
        if not isinstance(data, dict):
            raise ArchitectureError(f"an architecture must be a JSON object, got {type(data).__name__}")
        if str(data.get("format", "")).startswith("memarch.program"):
            raise ArchitectureError("this is a saved memarch program, not an architecture; its architecture is "
                                    f"{json.dumps(data.get('architecture'))}", rule="unknown-fields")
        unknown = sorted(set(data) - set(FIELDS) - set(OPTIONAL_FIELDS))
        if unknown:
            raise ArchitectureError(f"unknown field(s) {', '.join(unknown)}; allowed: "
                                    f"{', '.join(FIELDS + OPTIONAL_FIELDS)}", rule="unknown-fields")
        missing = [f for f in FIELDS[1:] if f not in data]
        if missing:
            raise ArchitectureError(f"missing field(s): {', '.join(missing)}")
        version = str(data.get("schema_version", SCHEMA_VERSION))
        if version != SCHEMA_VERSION:
            raise ArchitectureError(f"schema_version {version!r} is not supported (expected {SCHEMA_VERSION!r})")
        enc = data["encode"]
        if isinstance(enc, str) or not isinstance(enc, list) or not all(isinstance(e, str) for e in enc):
            raise ArchitectureError("'encode' must be a list of encoder names")
        for f in ("store", "retrieve", "manage"):
            if not isinstance(data[f], str):
                raise ArchitectureError(f"'{f}' must be a module name (a string)")
        params = data.get("params") or {}
        if not isinstance(params, dict) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in params.values()):
            raise ArchitectureError("'params' must be an object of knob name -> number, e.g. "
                                    '{"retrieve.top_k": 8}', rule="knob-value")
        return cls(tuple(enc), data["store"], data["retrieve"], data["manage"], params=params)

    def to_dict(self) -> dict:
        out = {"schema_version": SCHEMA_VERSION, "encode": list(self.encode), "store": self.store,
               "retrieve": self.retrieve, "manage": self.manage}
        if self.params:  # omitted when empty: files written before knobs read and write the same
            out["params"] = self.param_dict
        return out

    @classmethod
    def from_json(cls, text: str) -> "Architecture":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ArchitectureError(f"malformed JSON: {exc}") from None
        return cls.from_dict(data)

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def load(cls, path: str | Path) -> "Architecture":
        from memarch.pipeline.files import read_json

        try:
            return cls.from_dict(read_json(path, what="memory architecture JSON"))
        except ArchitectureError as exc:
            raise ArchitectureError(f"{path}: {exc}", rule=exc.rule) from None

    def save(self, path: str | Path) -> None:
        from memarch.pipeline.files import atomic_write_json

        atomic_write_json(path, self.to_dict())

    # -- helpers --------------------------------------------------------------------------------
    @property
    def family(self) -> str | None:
        from memarch.pipeline.registry import REGISTRY

        fams = {REGISTRY.family_of_encoder(e) for e in self.encode}
        return fams.pop() if len(fams) == 1 else None

    def canonical(self) -> "Architecture":
        """Encoders deduplicated and in registry order, so equal architectures compare equal."""
        from memarch.pipeline.registry import REGISTRY

        order = _encoder_order(REGISTRY)
        enc = tuple(sorted(set(self.encode), key=lambda e: (order.get(e, 10**6), e)))
        return self if enc == self.encode else replace(self, encode=enc)

    def key(self) -> str:
        """``"enc1+enc2|store|retriever|manager"`` of the canonical form, then ``|k=v,k=v`` when
        knobs are set (memoised per registry state: a test may swap the registry, which can change
        the encoder order)."""
        from memarch.pipeline.registry import REGISTRY

        stamp = REGISTRY.version()
        cached = self.__dict__.get("_key")
        if cached is not None and cached[0] == stamp:
            return cached[1]
        c = self.canonical()
        key = f"{'+'.join(c.encode)}|{c.store}|{c.retrieve}|{c.manage}"
        if self.params:
            key += "|" + ",".join(f"{k}={v!r}" for k, v in self.params)
        object.__setattr__(self, "_key", (stamp, key))
        return key

    def replace(self, **changes: Any) -> "Architecture":
        return replace(self, **changes)

    def __str__(self) -> str:
        return self.key()


def _number(value: Any) -> Any:
    """Knob values as plain numbers (numpy scalars from a sampler become int / float; floats are
    rounded to 6 decimals so that a key names one value); anything else is kept for validation."""
    if isinstance(value, bool) or not hasattr(value, "__float__") or isinstance(value, str):
        return value
    as_float = float(value)
    if hasattr(value, "__index__"):
        return int(value)
    return round(as_float, 6)


_ORDER: dict[str, object] = {}


def _encoder_order(registry) -> dict[str, int]:
    """Encoder name -> menu position, recomputed only when the registry changes."""
    stamp = registry.version()
    if _ORDER.get("stamp") != stamp:
        registry.specs("encoder")  # loads the modules first, which may register more
        _ORDER["order"] = {n: i for i, n in enumerate(registry.names("encoder"))}
        _ORDER["stamp"] = registry.version()
    return _ORDER["order"]  # type: ignore[return-value]

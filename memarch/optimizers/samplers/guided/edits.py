"""Coordinate edits: the one-module changes the guided search makes to an architecture
("retrieve: hybrid -> mmr", "encode: tip -> tip+workflow"), each kept valid by the fewest extra
changes, and ranked by the observation statistics."""
from __future__ import annotations

from dataclasses import dataclass

from memarch.optimizers.samplers.guided.observations import Observations
from memarch.pipeline.architecture import Architecture
from memarch.pipeline.space import ArchitectureSpace


@dataclass(frozen=True)
class Edit:
    field: str  # encode / store / retrieve / manage
    before: str
    after: str
    architecture: Architecture  # the valid result
    support: float  # how well the observations back the new choice
    extra: str = ""  # the other modules a rule made it change ("store: json -> graph; ..."), if any

    @property
    def text(self) -> str:
        head = f"{self.field}: {self.before} -> {self.after}"
        return f"{head}; {self.extra}" if self.extra else head

    @property
    def fields(self) -> set[str]:
        """Every module the edit changes (a rule may drag others along)."""
        return {self.field} | {part.split(":", 1)[0].strip() for part in self.extra.split(";") if part.strip()}


def _enc(arch: Architecture) -> str:
    return "+".join(arch.canonical().encode)


def with_choice(space: ArchitectureSpace, arch: Architecture, field: str, value: str) -> Architecture | None:
    """``arch`` with ``field`` set to ``value``; when that breaks a rule, the valid triple keeping the
    value with the fewest other changes (e.g. retriever graph brings store graph along)."""
    # The knob values of the modules that stay are kept (full space); the new module's are its defaults.
    cand = space.fit_params(arch.replace(**{field: value}))
    if space.is_valid(cand):
        return cand.canonical()
    best, best_d = None, None
    for s, r, m in space.triples():
        trip = {"store": s, "retrieve": r, "manage": m}
        if trip[field] != value:
            continue
        d = (s != arch.store) + (r != arch.retrieve) + (m != arch.manage)
        if best_d is None or d < best_d:
            best, best_d = space.fit_params(Architecture(arch.encode, s, r, m, params=arch.params)), d
    return best.canonical() if best and space.is_valid(best) else None


def candidate_edits(space: ArchitectureSpace, arch: Architecture, field: str, obs: Observations) -> list[Edit]:
    """Every valid one-step edit of ``field``, best supported first."""
    out: list[Edit] = []
    if field == "encode":
        cur = set(arch.encode)
        variants: list[tuple[set[str], float]] = []
        for e in space.encoders:
            if e not in cur:
                variants.append((cur | {e}, obs.encoder_effect(e) + obs.support("encode", e) * 1e-3))
                for old in cur:
                    variants.append(((cur - {old}) | {e},
                                     obs.encoder_effect(e) - obs.encoder_effect(old) - 1e-4))
            elif len(cur) > 1:
                variants.append((cur - {e}, -obs.encoder_effect(e) - 2e-4))
        for enc, support in variants:
            new = space.fit_params(Architecture(tuple(enc), arch.store, arch.retrieve, arch.manage,
                                                params=arch.params)).canonical()
            if space.is_valid(new):
                out.append(Edit("encode", _enc(arch), _enc(new), new, obs.mean + support))
    else:
        for value in getattr(space, {"store": "stores", "retrieve": "retrievers", "manage": "managers"}[field]):
            if value == getattr(arch, field):
                continue
            new = with_choice(space, arch, field, value)
            if new is not None:
                others = "; ".join(p for p in describe(arch, new).split("; ") if not p.startswith(f"{field}:"))
                out.append(Edit(field, getattr(arch, field), value, new, obs.support(field, value), others))
    return sorted(out, key=lambda e: (-e.support, e.text))


def describe(parent: Architecture, child: Architecture) -> str:
    """The edit text between two architectures ("; "-joined when several modules changed)."""
    parts = []
    if set(parent.encode) != set(child.encode):
        parts.append(f"encode: {_enc(parent)} -> {_enc(child)}")
    for field in ("store", "retrieve", "manage"):
        if getattr(parent, field) != getattr(child, field):
            parts.append(f"{field}: {getattr(parent, field)} -> {getattr(child, field)}")
    # Knob moves of the modules both keep (a swapped module's knobs go with it).
    before, after = parent.param_dict, child.param_dict
    for key in sorted(set(before) | set(after)):
        field = key.rsplit(".", 1)[0]
        kept = field.split(":", 1)[1] in set(parent.encode) & set(child.encode) if field.startswith("encode:") \
            else getattr(parent, field) == getattr(child, field)
        if kept and before.get(key) != after.get(key):
            parts.append(f"{key}: {before.get(key, 'default')} -> {after.get(key, 'default')}")
    return "; ".join(parts)

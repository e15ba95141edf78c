"""``memarch validate FILE``: check an architecture file against the space's rules."""
from __future__ import annotations

HELP = "check an architecture JSON file; prints the nearest valid architecture when it is invalid"


def add_arguments(p) -> None:
    p.add_argument("file", help="architecture JSON file")
    p.add_argument("--no-lm", action="store_true", help="validate against the LM-free space")


def run(args) -> int:
    from memarch.errors import ArchitectureError
    from memarch.pipeline.architecture import Architecture
    from memarch.modules.manifest import declare_builtin_modules
    from memarch.pipeline.space import ArchitectureSpace

    declare_builtin_modules()  # the modules' declarations are all it reads: no import of DSPy
    arch = Architecture.load(args.file)
    family = arch.family
    if family is None and not arch.encode:
        raise ArchitectureError(f"{args.file}: invalid: [encode-nonempty] encode must name at least one encoder",
                                rule="encode-nonempty")
    if family is None:
        raise ArchitectureError(f"{args.file}: encoders {list(arch.encode)} are unknown or mix families",
                                rule="known-names")
    space = ArchitectureSpace(family, lm_available=not args.no_lm)
    violations = space.violations(arch)
    if violations:
        hint = space.repair(arch) if all(v.rule != "known-names" for v in violations) else None
        msg = f"{args.file}: invalid: {violations[0]}"
        if hint is not None:
            msg += f" (nearest valid: {hint.to_json()})"
        raise ArchitectureError(msg, rule=violations[0].rule)
    needs_lm = [v.message for v in ArchitectureSpace(family, lm_available=False).violations(arch)]
    note = " (runs only with an LM: " + "; ".join(m.split(" needs an LM")[0] for m in needs_lm) + ")" \
        if needs_lm and not args.no_lm else ""
    print(f"{args.file}: valid {family} architecture {arch.key()}{note}")
    return 0

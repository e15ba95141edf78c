"""``memarch presets``: the human-designed memory systems as architectures of a family (and whether
each is valid without an LM), usable as ``memarch compile --preset NAME``."""
from __future__ import annotations

import json

HELP = "list the human-designed memory presets (mem0, zep, memgpt, ...) as architectures"


def add_arguments(p) -> None:
    p.add_argument("--family", default="conversation", help="conversation (default) or experience")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def run(args) -> int:
    from memarch.modules.manifest import declare_builtin_modules
    from memarch.pipeline.presets import NO_MEMORY, preset_architectures
    from memarch.pipeline.space import ArchitectureSpace

    declare_builtin_modules()  # the modules' declarations are all it reads: no import of DSPy
    full = ArchitectureSpace(args.family)
    free = ArchitectureSpace(args.family, lm_available=False)
    rows = []
    for name, arch in preset_architectures(args.family).items():
        v_full, v_free = full.violations(arch), free.violations(arch)
        rows.append({"name": name, "architecture": arch.to_dict(), "valid": not v_full,
                     "valid_without_lm": not v_free, "problem": str((v_full or v_free or [""])[0])})
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(f"presets of the {args.family} family (plus the '{NO_MEMORY}' baseline):")
    for r in rows:
        flag = "" if r["valid_without_lm"] else ("  [needs an LM]" if r["valid"] else f"  [invalid: {r['problem']}]")
        a = r["architecture"]
        print(f"  {r['name']:<20} {'+'.join(a['encode'])} | {a['store']} | {a['retrieve']} | {a['manage']}{flag}")
    return 0

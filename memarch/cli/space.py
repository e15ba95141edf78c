"""``memarch space``: the architecture space of a family, full and LM-free, with its rules."""
from __future__ import annotations

import json

HELP = "print the architecture space (sizes, modules, rules, what drops out without an LM)"


def add_arguments(p) -> None:
    p.add_argument("--family", default="experience", help="experience (default) or conversation")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--markdown", action="store_true",
                   help="the module table of both families as Markdown (the README's table)")


def run(args) -> int:
    from memarch.modules.manifest import declare_builtin_modules
    from memarch.pipeline.space import ArchitectureSpace

    declare_builtin_modules()  # the modules' declarations are all it reads: no import of DSPy
    if args.markdown:
        print(module_table())
        return 0
    d = ArchitectureSpace(args.family).to_dict()
    if args.json:
        print(json.dumps(d, indent=1))
        return 0
    print(f"family {d['family']}: {d['total']} tuples, {d['valid']} valid "
          f"({d['valid_triples']} valid store/retriever/manager triples)")
    print(f"usable without an LM: {d['valid_without_lm']} valid ({d['valid_triples_without_lm']} triples)")
    for key, why in d["excluded"].items():
        print(f"  excluded without an LM: {key} — {why}")
    for key in d.get("opt_in_left_out", []):
        print(f"  opt-in, searched only where the benchmark uses it (TextWorldExpress notes): {key}")
    for role, mods in d["modules"].items():
        print(f"{role}s:")
        for m in mods:
            knobs = ", ".join(k["name"] for k in m["knobs"])
            flags = [f for f, on in (("needs LM", m["needs_lm"]), ("uses LM", m["uses_lm"] and not m["needs_lm"]),
                                     ("embeddings", m["needs_embeddings"])) if on]
            req = [f"store:{'/'.join(m['requires_store'])}"] if m["requires_store"] else []
            req += [f"retriever:{'/'.join(m['requires_retriever'])}"] if m["requires_retriever"] else []
            extra = ", ".join(flags + req)
            print(f"  {m['name']:<18} {m['description']}" + (f"  [{extra}]" if extra else "")
                  + (f"  knobs: {knobs}" if knobs else ""))
    print("rules:")
    for name, text in d["rules"].items():
        print(f"  {name}: {text}")
    return 0


def module_table() -> str:
    """Markdown table of every registered module, generated from the registry (README source)."""
    from memarch.pipeline.registry import FAMILIES, REGISTRY, ROLES

    rows = ["| role | module | families | LM | requires | knobs | what it does |", "|---|---|---|---|---|---|---|"]
    for role in ROLES:
        for spec in sorted(REGISTRY.specs(role), key=lambda s: (FAMILIES.index(s.families[0]), s.order)):
            lm = "required" if spec.needs_lm else ("optional" if spec.uses_lm else "no")
            req = [f"store: {'/'.join(sorted(spec.requires_store))}"] if spec.requires_store else []
            req += [f"retriever: {'/'.join(sorted(spec.requires_retriever))}"] if spec.requires_retriever else []
            fams = "both" if set(spec.families) == set(FAMILIES) else ", ".join(spec.families)
            knobs = _knob_names(spec.knobs)
            rows.append(f"| {role} | `{spec.name}` | {fams} | {lm} | {'; '.join(req) or '-'} | {knobs} "
                        f"| {spec.description.replace('|', '&#124;')} |")
    return "\n".join(rows)


def _knob_names(knobs) -> str:
    """A module's own knobs, then the shared ones by group: "`top_k`, `pool`; pack: `pack`, ..."."""
    own = ", ".join(f"`{k.name}`" for k in knobs if not k.group)
    groups: dict[str, list[str]] = {}
    for k in knobs:
        if k.group:
            groups.setdefault(k.group, []).append(f"`{k.name}`")
    parts = ([own] if own else []) + [f"{g}: {', '.join(names)}" for g, names in groups.items()]
    return "; ".join(parts) or "-"


def knob_table() -> str:
    """Markdown table of every module's numeric knobs (docs/search.md source), from the registry."""
    from memarch.pipeline.registry import FAMILIES, REGISTRY, ROLES
    from memarch.pipeline.space import param_key

    rows = ["| module | param key | range and default | what it sets |", "|---|---|---|---|"]
    for role in ROLES:
        for spec in sorted(REGISTRY.specs(role), key=lambda s: (FAMILIES.index(s.families[0]), s.order)):
            for k in spec.knobs:
                rows.append(f"| {role} `{spec.name}` | `{param_key(role, spec.name, k.name)}` | {k.range_text()} "
                            f"| {k.description} |")
    return "\n".join(rows)

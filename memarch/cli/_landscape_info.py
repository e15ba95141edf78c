"""``memarch landscape info``: what a landscape holds — size, questions per split, shared
evaluations, and per stored metric the oracle, the best preset and the no-memory row on test."""
from __future__ import annotations

from pathlib import Path

import numpy as np

HELP = "describe a landscape: size, splits, groups, oracle / best preset / no memory per metric"


def add_arguments(p) -> None:
    p.add_argument("file", help="a landscape .npz")


def run(args) -> int:
    from memarch.optimizers.landscapes.table import NONE, Landscape
    from memarch.optimizers.landscapes.build import sharing_summary

    land = Landscape.load(args.file)
    m = land.meta
    size = Path(args.file).stat().st_size
    archs = [i for i, k in enumerate(land.keys) if k != NONE]
    sample = m["sample"]
    print(f"{args.file}: {size / 1e6:.2f} MB, {m['format']}, benchmark {m['benchmark']} {m['knobs']}, "
          f"{m['family']} family, embedder {m['embedder']}, B={m['context_budget']} top_k={m['top_k']}")
    how = "the whole LM-free space" if sample["full"] else f"seeded sample, seed {sample['seed']}"
    if not m["complete"]:
        how += f"; INCOMPLETE: {len(m['missing'])} planned architectures missing"
    from memarch.cli._landscape_build import lever_text

    print(f"architectures: {len(archs)} of {sample['space']}{lever_text(m)} ({how}); "
          f"no-memory row: {'yes' if NONE in land else 'no'}")
    print("questions: " + ", ".join(f"{s} {n}" for s, n in m["queries"].items())
          + f" (split by {m['split']['split_by']}, seed {m['split']['seed']})")
    groups = m.get("groups", [])
    shared = [g for g in groups if len(g["members"]) > 1]
    print(f"groups: {len(groups)} evaluations, {len(shared)} shared by {sum(len(g['members']) for g in shared)} rows")
    print(sharing_summary(land))
    presets = land.presets
    for o in land.metrics:
        test = land.metric_values("test", o)
        search = land.metric_values("search", o)
        best = max(archs, key=lambda i: (test[i], -i)) if archs else None
        line = f"{o}:"
        if best is not None:
            line += f" oracle (best test) {test[best]:.4f} {land.keys[best]};"
        if presets:
            name, key = max(presets.items(), key=lambda kv: (test[land.index(kv[1])], kv[0]))
            line += f" best preset on test {test[land.index(key)]:.4f} {name} ({key});"
        if NONE in land:
            line += f" no memory {test[land.index(None)]:.4f};"
        if archs:
            top = search[archs].max()
            line += f" {int(np.sum(search[archs] == top))} tied at the top of search ({top:.4f})"
        print(line)
    return 0

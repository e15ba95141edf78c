"""``memarch landscape merge``: join landscape parts built apart (``--shard i/n``) into one file."""
from __future__ import annotations

import sys
from pathlib import Path

HELP = "join landscape shards into one file (same settings and questions, disjoint architectures)"


def add_arguments(p) -> None:
    p.add_argument("--out", required=True, help="the joined landscape file")
    p.add_argument("parts", nargs="+", metavar="PART", help="landscape files built with --shard")


def run(args) -> int:
    from memarch.optimizers.landscapes.table import Landscape
    from memarch.optimizers.landscapes.build import sharing_summary
    from memarch.optimizers.landscapes.join import join

    land = join([Landscape.load(p) for p in args.parts])
    land.save(args.out)
    out = Path(args.out)
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB): {len(land)} rows from {len(args.parts)} parts")
    print(sharing_summary(land))
    missing = land.meta["missing"]
    if missing:
        sys.stderr.write(f"missing {len(missing)} planned architectures (e.g. {', '.join(missing[:3])}); "
                         "merge the other shards too\n")
    return 0

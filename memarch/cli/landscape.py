"""``memarch landscape``: build, merge and inspect landscapes — every LM-free architecture of a
benchmark's space evaluated once, a tabular benchmark a search can be replayed against. Each action
is a module ``memarch/cli/_landscape_<action>.py`` (HELP, add_arguments, run): found, not listed."""
from __future__ import annotations

import importlib
import pkgutil

from memarch.errors import MemarchError

HELP = "build, merge or inspect a landscape (every LM-free architecture evaluated once, for replays)"
PREFIX = "_landscape_"


def actions() -> dict[str, object]:
    """Action name -> module, from the ``_landscape_*`` modules of this package."""
    pkg = importlib.import_module("memarch.cli")
    out = {}
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        if info.name.startswith(PREFIX):
            mod = importlib.import_module(f"memarch.cli.{info.name}")
            out[info.name[len(PREFIX):]] = mod
    return out


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    for name, mod in actions().items():
        sp = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(sp)
        sp.set_defaults(_action=mod.run)


def run(args) -> int:
    action = getattr(args, "_action", None)
    if action is None:
        raise MemarchError(f"landscape: name an action ({', '.join(actions())})")
    return int(action(args) or 0)

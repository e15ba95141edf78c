"""The ``memarch`` command line. Each subcommand is one module in this package that defines
``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``; they are discovered, not listed.
Bad input prints one line and exits 2, never a traceback."""
from __future__ import annotations

import argparse
import importlib
import logging
import os
import pkgutil
import sys

from memarch.errors import MemarchError

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(EXIT_USAGE)


def _commands():
    pkg = importlib.import_module(__name__)
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(mod, "run") and hasattr(mod, "add_arguments"):
            yield getattr(mod, "COMMAND", info.name), mod


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="memarch", description="Search for the best memory architecture for an LLM agent.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress and LM fallbacks")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    for name, mod in _commands():
        p = sub.add_parser(name, help=getattr(mod, "HELP", ""), description=getattr(mod, "HELP", ""))
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    if not getattr(args, "_run", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args._run(args) or 0)
    except MemarchError as exc:
        sys.stderr.write(f"memarch: error: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("memarch: interrupted\n")
        return 130
    except BrokenPipeError:  # `memarch space | head`: the reader left; not an error of ours
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

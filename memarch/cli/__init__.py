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


# Options renamed so that one name means one thing: (old, new, commands that refuse the old one
# (None: every command that has the new one), the one line naming the new one).
RENAMED = (
    ("--objective", "--metric", None,
     "memarch: --objective is now --metric (the quality metric; --objectives names the study's objectives)"),
    ("--budget", "--context-budget", ("evaluate",),
     "memarch evaluate: --budget is now --context-budget (words of context); --budget counts trials on "
     "compile and compare"),
)


class _Renamed(argparse.Action):
    """A hidden old option name: refused with one line naming the new one, exit 2 (before argparse
    could read ``--objective`` as an abbreviation of ``--objectives``)."""

    def __init__(self, option_strings, dest, line: str = "", **kwargs):
        super().__init__(option_strings, dest, nargs="?", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        self.line = line

    def __call__(self, parser, namespace, values, option_string=None):
        sys.stderr.write(self.line + "\n")
        raise SystemExit(EXIT_USAGE)


def refuse_renamed(parser: argparse.ArgumentParser, command: str) -> None:
    """Add the `RENAMED` old options to ``parser`` (command ``command``, e.g. "evaluate" or
    "landscape replay") and to its sub-commands' parsers."""
    options = {o for a in parser._actions for o in a.option_strings}
    for old, new, commands, line in RENAMED:
        if new in options and old not in options and (commands is None or command in commands):
            parser.add_argument(old, action=_Renamed, line=line)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                refuse_renamed(sub, f"{command} {name}")


def is_renamed(action: argparse.Action) -> bool:
    """Whether ``action`` is an old option name kept only to be refused."""
    return isinstance(action, _Renamed)


def _commands():
    pkg = importlib.import_module(__name__)
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(mod, "run") and hasattr(mod, "add_arguments"):
            yield getattr(mod, "COMMAND", info.name), mod


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The whole parser; given ``argv``, only the named command's options are added (another
    command's options may import a heavy library, and ``memarch space`` should start at once), and
    with no command named (``memarch --help``) none are: the list of commands is all it shows."""
    parser = _Parser(prog="memarch", description="Search for the best memory architecture for an LLM agent.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress and LM fallbacks")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    commands = list(_commands())
    names = {name for name, _ in commands}
    named = None if argv is None else next((a for a in argv if not a.startswith("-")), "")
    for name, mod in commands:
        p = sub.add_parser(name, help=getattr(mod, "HELP", ""), description=getattr(mod, "HELP", ""))
        if named is None or named == name or (named and named not in names):  # unknown: argparse lists all
            mod.add_arguments(p)
            refuse_renamed(p, name)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
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

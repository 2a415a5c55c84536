"""``python -m jaxlite <command>`` (also the ``jaxlite`` script): jaxlite's command line.

Each command is a module under ``jaxlite.tools`` defining ``HELP`` (one line),
``add_arguments(parser)`` and ``run(args) -> int`` (the exit status).  Adding a command
is one module plus one row of ``COMMANDS``.
"""
from __future__ import annotations

import argparse
import importlib
import sys

# command name -> module implementing it
COMMANDS = {
    "demo": "jaxlite.tools.demo",
    "doctor": "jaxlite.tools.doctor",
    "launch": "jaxlite.tools.launch",
    "lint": "jaxlite.tools.lint",
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with one subcommand per entry of ``COMMANDS``."""
    parser = argparse.ArgumentParser(
        prog="python -m jaxlite",
        description="jaxlite: JAX's core written from scratch in Python.")
    sub = parser.add_subparsers(dest="command", metavar="<command>")
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parses ``argv`` (default: ``sys.argv[1:]``), runs the command, returns its status.

    No command prints the help (listing the commands) and returns 2; unknown commands and
    bad options make argparse print usage and exit with status 2.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    return int(args._run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())

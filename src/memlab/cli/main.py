"""Entry point of the ``memlab`` command.

Each command group lives in its own module that exposes ``register(subparsers)``; the list
below is explicit so nothing registers itself as an import side effect.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from memlab.errors import MemlabError, one_line

__all__ = ["UsageError", "build_parser", "main"]

# Modules of memlab.cli that define command groups, in --help order.
COMMAND_MODULES: tuple[str, ...] = (
    "demo",
    "run_commands",
    "prompts",
    "datasets",
    "report",
    "compare",
    "cache",
    "matching",
    "plugins",
)


class UsageError(MemlabError, ValueError):
    """The command line itself is wrong (unknown option, bad value)."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (no usage block) and exit 2 via main."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message} (see '{self.prog} --help')")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Build the argument parser.

    Args:
        command: Register only the module that defines this command in full; every other
            command is declared by its ``--help`` line alone, so that running one command
            imports nothing the others need (their help texts list plugins' metrics and
            matchers). ``None`` registers every command in full; ``""`` none (``--help``).
    """
    parser = _Parser(
        prog="memlab",
        description="Replay labeled conversations through an LLM memory pipeline, validate "
        "every reply against the JSON contract, and compare configurations.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more log output (-vv for debug)"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"memlab.cli.{name}")
        if command is None or command in module.COMMANDS:
            module.register(subparsers)
        else:
            for declared, line in module.COMMANDS.items():
                subparsers.add_parser(declared, help=line)
    return parser


def _command_word(argv: Sequence[str]) -> str:
    """The command ``argv`` names: its first word that is not an option ("" when none)."""
    return next((word for word in argv if not word.startswith("-")), "")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return the process exit code."""
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command_word(words))
    try:
        args = parser.parse_args(words)
    except UsageError as exc:
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    level = logging.WARNING - 10 * min(args.verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    # Dask (--executor) logs each connection at INFO: shown from -vv on, unless set otherwise.
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "info" if args.verbose >= 2 else "warning")
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        result = func(args)
    except MemlabError as exc:
        # Bad input or a failed backend: one line naming the problem, no traceback.
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())

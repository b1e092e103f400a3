"""Entry point of the ``memlab`` command.

Each command group lives in its own module that exposes ``register(subparsers)``; the list
below is explicit so nothing registers itself as an import side effect.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from memlab.core.base.files import io_reason
from memlab.core.base.redact import RedactingFilter, redact_text
from memlab.errors import MemlabError, one_line

__all__ = [
    "EXIT_INTERRUPTED",
    "INTERRUPTED_REPLAYS",
    "UsageError",
    "build_parser",
    "console",
    "main",
]

# Modules that define command groups, in --help order.
COMMAND_MODULES: tuple[str, ...] = (
    "memlab.cli.experiment.demo",
    "memlab.cli.experiment.run_commands",
    "memlab.cli.experiment.ab",
    "memlab.cli.experiment.tune",
    "memlab.cli.experiment.qa",
    "memlab.cli.experiment.judge",
    "memlab.cli.tools.prompts",
    "memlab.cli.tools.datasets",
    "memlab.cli.results.runs",
    "memlab.cli.results.report",
    "memlab.cli.results.compare",
    "memlab.cli.tools.cache",
    "memlab.cli.tools.matching",
    "memlab.cli.tools.plugins",
    "memlab.cli.tools.init",
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
        module = importlib.import_module(name)
        if command is None or command in module.COMMANDS:
            module.register(subparsers)
        else:
            for declared, line in module.COMMANDS.items():
                subparsers.add_parser(declared, help=line)
    return parser


def _command_word(argv: Sequence[str]) -> str:
    """The command ``argv`` names: its first word that is not an option ("" when none)."""
    return next((word for word in argv if not word.startswith("-")), "")


EXIT_INTERRUPTED = 130
"""Exit code after Ctrl-C (128 + SIGINT), as shells report it."""
INTERRUPTED_REPLAYS = "interrupted; finished replays are kept: run the same command again to resume"
"""The line after Ctrl-C of a command that replays (the default)."""

logger = logging.getLogger(__name__)


def _error(message: str) -> None:
    """Print the one ``error:`` line of a failed command (redacted, bounded)."""
    print(f"error: {one_line(redact_text(message))}", file=sys.stderr)


class _FewOfEach(logging.Filter):
    """Show the first few warnings of each repetitive kind (a failed update, a corrupt cache
    entry, a retried request), then one line saying the rest are not shown: a sweep of
    10,000 failing updates must not print 20,000 lines (``-v`` shows every one; the run's
    tables count the failed updates and ``calls.jsonl`` holds each error)."""

    LOGGERS = frozenset(
        {
            "memlab.core.pipeline.updater",
            "memlab.core.pipeline.queue",
            "memlab.backends.caching.cache",
            "memlab.backends.remote.retry",
        }
    )
    SHOWN = 3

    def __init__(self) -> None:
        super().__init__()
        self._seen: dict[str, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name not in self.LOGGERS or record.levelno != logging.WARNING:
            return True
        count = self._seen[record.name] = self._seen.get(record.name, 0) + 1
        if count == self.SHOWN + 1:
            record.msg = "more warnings like these are not shown (-v shows every one)"
            record.args = None
            return True
        return count <= self.SHOWN


def _setup_logging(verbose: int) -> None:
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())  # no credential reaches a log line
        for old in [f for f in handler.filters if isinstance(f, _FewOfEach)]:
            handler.removeFilter(old)
        if not verbose:
            handler.addFilter(_FewOfEach())
    # Dask (--executor) logs each connection at INFO: shown from -vv on, unless set otherwise.
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "info" if verbose >= 2 else "warning")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return the process exit code.

    Every failure ends in one ``error:`` line on stderr: exit 2 for bad input and errors
    memlab names (a file it cannot use, a failed backend), 1 for an unexpected error (its
    traceback is logged with ``-vv``), 130 after Ctrl-C.
    """
    words = sys.argv[1:] if argv is None else list(argv)
    try:  # Ctrl-C while the command's modules are imported: nothing has started yet
        parser = build_parser(_command_word(words))
        args = parser.parse_args(words)
        _setup_logging(args.verbose)
    except UsageError as exc:
        _error(str(exc))
        return 2
    except KeyboardInterrupt:
        _error("interrupted before the command started; nothing was done")
        return EXIT_INTERRUPTED
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        result = func(args)
    except MemlabError as exc:
        # Bad input or a failed backend: one line naming the problem, no traceback.
        _error(str(exc))
        return 2
    except KeyboardInterrupt:
        # A command may say what an interruption keeps (``set_defaults(interrupted=...)``).
        _error(getattr(args, "interrupted", INTERRUPTED_REPLAYS))
        return EXIT_INTERRUPTED
    except OSError as exc:  # a file or directory memlab cannot use (read-only, full disk)
        where = f"{exc.filename}: " if exc.filename else ""
        _error(f"{where}{io_reason(exc)}")
        return 2
    except Exception as exc:
        logger.debug("unexpected error", exc_info=True)
        _error(f"unexpected {type(exc).__name__}: {exc} (rerun with -vv for the traceback)")
        return 1
    return int(result or 0)


def console() -> NoReturn:
    """The ``memlab`` executable: :func:`main`, then exit.

    After Ctrl-C the process exits at once: replays still waiting on a server in worker
    threads must not hold it (their records are written atomically or not at all, so the run
    resumes cleanly).
    """
    code = main()
    if code == EXIT_INTERRUPTED:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        logging.shutdown()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    console()

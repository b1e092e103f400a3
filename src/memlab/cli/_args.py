"""Argument types and options shared by the commands: bad values fail in argparse, first.

Each type function is an argparse ``type=``: it returns the parsed value or raises
``argparse.ArgumentTypeError`` with a message saying what is accepted; the parser then
reports ``error: memlab ...: argument --x: <message>`` on one line with exit code 2. The
``add_*`` functions add an option that several commands take, defined once here.
"""

from __future__ import annotations

import argparse
import errno
import os
from pathlib import Path
from typing import TYPE_CHECKING

from memlab.core.safe_names import UnsafeNameError, safe_component
from memlab.errors import excerpt

if TYPE_CHECKING:
    from memlab.sweeps.executors import DaskSpec

__all__ = [
    "MAX_WORKERS",
    "add_cache_options",
    "add_prompts_option",
    "add_stat_options",
    "count",
    "directory",
    "executor",
    "existing_directory",
    "run_name",
    "workers",
]

MAX_WORKERS = 256
"""More concurrent replays than this only queue up inside the backend."""


def _int_between(text: str, low: int, high: int | None, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {excerpt(text)}") from None
    if value < low or (high is not None and value > high):
        bound = f"from {low} to {high}" if high is not None else f"at least {low}"
        raise argparse.ArgumentTypeError(f"{what} must be {bound}, got {value}")
    return value


def workers(text: str) -> int:
    """Concurrent replays: 1 to :data:`MAX_WORKERS`."""
    return _int_between(text, 1, MAX_WORKERS, "the number of workers")


def executor(text: str) -> DaskSpec:
    """``dask://HOST:PORT`` or ``dask-local:N[xT]`` (see :mod:`memlab.sweeps.executors`)."""
    from memlab.sweeps.executors import ExecutorError, parse_executor

    try:
        return parse_executor(text)
    except ExecutorError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def count(text: str) -> int:
    """A positive count (``--max-owners``, ``--max-sessions``)."""
    return _int_between(text, 1, None, "the count")


def run_name(text: str) -> str:
    """A run directory name: one safe path component (see :mod:`memlab.core.safe_names`)."""
    try:
        return safe_component(text, "run name")
    except UnsafeNameError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _path_problem(text: str) -> str | None:
    """Why ``text`` cannot name a directory memlab creates or uses, or ``None``."""
    if not text or "\x00" in text:
        return "the path is empty or contains a NUL character"
    path = Path(text)
    for candidate in (path, *path.parents):
        try:
            is_dir = candidate.is_dir()
            exists = is_dir or candidate.exists()
        except OSError as exc:
            if exc.errno == errno.ENAMETOOLONG:
                return "the path is too long for the file system"
            return exc.strerror or str(exc)
        if is_dir:
            return None
        if exists:
            where = "it" if candidate == path else f"{candidate}"
            return f"{where} is a file, not a directory"
    return None


def directory(text: str) -> str:
    """A directory that exists or can be created (no part of the path is a file)."""
    problem = _path_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{excerpt(text, 200)}: {problem}")
    return text


def existing_directory(text: str) -> str:
    """A directory that exists."""
    problem = _path_problem(text)
    if problem is None and not os.path.isdir(text):
        problem = "no such directory"
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{excerpt(text, 200)}: {problem}")
    return text


def add_prompts_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--prompts PATH [PATH ...]``: prompt files or directories to load variants from."""
    parser.add_argument("--prompts", nargs="+", default=[], metavar="PATH", help=help_text)


def add_cache_options(parser: argparse.ArgumentParser, dir_help: str) -> None:
    """``--cache-dir`` and ``--cache-mode`` of the response cache."""
    from memlab.backends.cache import CacheMode

    parser.add_argument("--cache-dir", type=directory, help=dir_help)
    parser.add_argument(
        "--cache-mode",
        choices=[m.value for m in CacheMode],
        default=CacheMode.READ_WRITE.value,
        help="read_write (default), read_only (a cache miss is an error) or off",
    )


def add_stat_options(parser: argparse.ArgumentParser) -> None:
    """``--alpha`` and ``--resamples`` of the paired tests (``compare`` and ``gate``)."""
    from memlab.scoring.stat_options import DEFAULT_RESAMPLES

    parser.add_argument(
        "--alpha", type=float, default=0.05, help="significance level (default 0.05)"
    )
    parser.add_argument(
        "--resamples",
        type=int,
        default=DEFAULT_RESAMPLES,
        help=f"bootstrap and permutation resamples (default {DEFAULT_RESAMPLES})",
    )

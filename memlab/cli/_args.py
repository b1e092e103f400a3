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

from memlab.core.base.safe_names import UnsafeNameError, safe_component
from memlab.errors import excerpt

if TYPE_CHECKING:
    from memlab.backends.remote.rate_limit import RateLimit
    from memlab.core.jsondoc.contract import SchemaBounds
    from memlab.sweeps.executors import DaskSpec

__all__ = [
    "MAX_WORKERS",
    "add_bounds_options",
    "add_cache_options",
    "add_cost_options",
    "add_max_judge_errors",
    "add_prompts_option",
    "add_stat_options",
    "count",
    "curve_every",
    "directory",
    "executor",
    "existing_directory",
    "local_batch",
    "rate_limit_from_args",
    "reply_bound_line",
    "resamples",
    "run_name",
    "schema_bounds",
    "share",
    "single_blas_thread",
    "token_limit",
    "tolerance",
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


def curve_every(text: str) -> int:
    """Sessions between two askings of the consolidation curve: at least 1."""
    return _int_between(text, 1, None, "the sessions between askings")


def resamples(text: str) -> int:
    """Bootstrap and permutation resamples: 0 (off) to ``MAX_RESAMPLES``."""
    from memlab.scoring.inference.stat_options import MAX_RESAMPLES

    return _int_between(text, 0, MAX_RESAMPLES, "the number of resamples")


def executor(text: str) -> DaskSpec:
    """``dask://HOST:PORT`` or ``dask-local:N[xT]`` (see :mod:`memlab.sweeps.executors`)."""
    from memlab.sweeps.executors import ExecutorError, check_local_size, parse_executor

    try:
        spec = parse_executor(text)
        return spec if spec.address else check_local_size(spec)
    except ExecutorError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def count(text: str) -> int:
    """A positive count (``--max-owners``, ``--max-sessions``)."""
    return _int_between(text, 1, None, "the count")


def token_limit(text: str) -> int:
    """A completion token limit of memory QA (``--max-tokens``): 1 to 8192, as QASpec's."""
    return _int_between(text, 1, 8192, "the token limit")


def run_name(text: str) -> str:
    """A run directory name: one safe path component (see :mod:`memlab.core.base.safe_names`)."""
    try:
        return safe_component(text, "run name")
    except UnsafeNameError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def tolerance(text: str) -> float | dict[str, float]:
    """``SIZE`` or ``RATE=SIZE,...`` of ``--tolerance`` (``gate`` and ``ab``)."""
    try:
        if "=" not in text:
            return float(text)
        pairs = (item.partition("=") for item in text.split(",") if item.strip())
        return {name.strip(): float(size) for name, _, size in pairs}
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number or RATE=SIZE,..., got {excerpt(text)}"
        ) from None


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


def share(text: str) -> float:
    """A share of a whole: a number from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {excerpt(text)}") from None
    if not 0.0 <= value <= 1.0:  # NaN fails both
        raise argparse.ArgumentTypeError(f"expected a share from 0 to 1, got {excerpt(text)}")
    return value


def add_max_judge_errors(parser: argparse.ArgumentParser) -> None:
    """The share of answers a judge may leave without a verdict before a QA step fails."""
    parser.add_argument(
        "--max-judge-errors",
        type=share,
        default=0.0,
        metavar="SHARE",
        help="memory QA: the share of answers a judge may leave without a verdict (an "
        "unreadable reply) before the command fails (exit 1); they count as wrong answers "
        "either way (default: 0)",
    )


def add_prompts_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--prompts PATH [PATH ...]``: prompt files or directories to load variants from."""
    parser.add_argument("--prompts", nargs="+", default=[], metavar="PATH", help=help_text)


def add_matcher_option(
    parser: argparse.ArgumentParser,
    what: str = "fact matcher for recall and precision",
    note: str = "",
    after: str = "",
) -> None:
    """``--matcher NAME`` (default ``default``), its help listing the built-in matchers
    (``note`` inside the default's parentheses, ``after`` behind them)."""
    from memlab.matching.matchers import matcher_help

    parser.add_argument(
        "--matcher",
        default="default",
        help=f"{what}: "
        + ", ".join(matcher_help(plugins=False))
        + f", or a plugin's (memlab matcher list) (default: default{note}){after}",
    )


def add_cache_options(parser: argparse.ArgumentParser, dir_help: str) -> None:
    """``--cache-dir`` and ``--cache-mode`` of the response cache."""
    from memlab.backends.caching.cache import CacheMode

    parser.add_argument("--cache-dir", type=directory, help=dir_help)
    parser.add_argument(
        "--cache-mode",
        choices=[m.value for m in CacheMode],
        default=CacheMode.READ_WRITE.value,
        help="read_write (default), read_only (a cache miss is an error) or off",
    )


def _amount(text: str) -> float:
    """A non-negative, finite amount (USD, requests or tokens a minute)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {excerpt(text)}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a non-negative number, got {excerpt(text)}")
    return value


def _rate(text: str) -> float:
    value = _amount(text)
    if value == 0:
        raise argparse.ArgumentTypeError("a rate must be more than 0")
    return value


def add_cost_options(parser: argparse.ArgumentParser, what: str) -> None:
    """``--dry-run``, ``--rpm``, ``--tpm`` and ``--max-cost`` of the commands that call models."""
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help=f"print the calls, tokens and cost {what} would make (cache hits counted out) "
        "and exit; no model is called and nothing is written",
    )
    parser.add_argument(
        "--rpm",
        type=_rate,
        metavar="N",
        help="pace each model endpoint's calls at N requests a minute, shared by all "
        "workers (with --dry-run: print the time at N requests a minute)",
    )
    parser.add_argument(
        "--tpm",
        type=_rate,
        metavar="N",
        help="pace each model endpoint's calls at N tokens a minute (prompt plus "
        "max_tokens), shared by all workers (with --dry-run: print the time at that rate)",
    )
    parser.add_argument(
        "--max-cost",
        type=_amount,
        metavar="USD",
        help="stop before the calls' spend (at the backends' declared prices) could pass "
        "USD; what finished is kept and the same command resumes (exit 1)",
    )


def local_batch(text: str) -> int:
    """``--local-batch``: a lane count from 1 to 32."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= 32:
        raise argparse.ArgumentTypeError(f"expected a lane count from 1 to 32, got {text!r}")
    return value


def rate_limit_from_args(args: argparse.Namespace) -> RateLimit | None:
    """The :class:`~memlab.backends.remote.rate_limit.RateLimit` of ``--rpm``/``--tpm``, or None."""
    if args.rpm is None and args.tpm is None:
        return None
    from memlab.backends.remote.rate_limit import RateLimit

    return RateLimit(args.rpm, args.tpm)


def single_blas_thread() -> None:
    """One BLAS thread for the commands that score runs, unless the user set it (before
    NumPy loads). Their matrix products are small (resamples x owners by a few columns):
    BLAS worker threads cost more CPU than they save there, several times more on a busy
    machine, and give the same numbers."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def add_stat_options(parser: argparse.ArgumentParser) -> None:
    """``--alpha`` and ``--resamples`` of the paired tests (``compare`` and ``gate``)."""
    from memlab.scoring.inference.stat_options import DEFAULT_RESAMPLES, MAX_RESAMPLES

    parser.add_argument(
        "--alpha", type=float, default=0.05, help="significance level (default 0.05)"
    )
    parser.add_argument(
        "--resamples",
        type=resamples,
        default=DEFAULT_RESAMPLES,
        help=f"bootstrap and permutation resamples, 0 to {MAX_RESAMPLES} "
        f"(default {DEFAULT_RESAMPLES})",
    )


def add_allow_mixed(parser: argparse.ArgumentParser) -> None:
    """``--allow-mixed``: compare lanes measured differently, under a banner."""
    parser.add_argument(
        "--allow-mixed",
        action="store_true",
        help="compare lanes of another dataset, owner set, matcher or judge, or simulated "
        "lanes with real ones (refused otherwise); a banner names what is mixed",
    )


def schema_bounds(text: str) -> SchemaBounds:
    """``KEY=N,...`` of a lane's ``schema_bounds``, e.g. ``summary_chars=60,max_new_facts=3``."""
    from pydantic import ValidationError

    from memlab.core.jsondoc.contract import SchemaBounds

    values: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, equals, number = item.partition("=")
        known = ", ".join(SchemaBounds.model_fields)
        if not equals or key.strip() not in SchemaBounds.model_fields:
            raise argparse.ArgumentTypeError(
                f"expected KEY=N with KEY one of {known}, got {excerpt(item)}"
            )
        values[key.strip()] = _int_between(number.strip(), 0, None, key.strip())
    try:
        return SchemaBounds(**values)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise argparse.ArgumentTypeError(f"{err['loc'][0]}: {err['msg']}") from None


def add_bounds_options(parser: argparse.ArgumentParser) -> None:
    """``--bounds`` and ``--backend``: whose worst-case reply length a command prints."""
    parser.add_argument(
        "--bounds",
        type=schema_bounds,
        metavar="KEY=N,...",
        help="schema_bounds of a json_schema lane, e.g. "
        "summary_chars=60,fact_chars=80,max_new_facts=3,max_removals=2 (unset keys: defaults)",
    )
    parser.add_argument(
        "--backend",
        default="local:smollm2",
        help="the lane's backend: its plugin names the grammar the bound is computed for "
        "(local:... memlab's compact one, others llama.cpp's; default: local:smollm2)",
    )


def reply_bound_line(bounds: SchemaBounds | None, backend: str) -> str:
    """The worst-case reply length of bounded json_schema output, as one line."""
    from memlab.backends.decoding.grammar import bounded_reply_tokens
    from memlab.backends.registry import dialect_for
    from memlab.core.jsondoc.contract import SchemaBounds

    bounds = bounds if bounds is not None else SchemaBounds.model_validate({})
    settings = " ".join(f"{key}={value}" for key, value in bounds.model_dump().items())
    dialect = dialect_for(backend)
    return (
        f"worst case of a reply under schema_bounds {settings} with {backend} "
        f"({dialect} grammar): {bounded_reply_tokens(bounds, dialect)} tokens, the "
        "end of generation included; a lane's max_tokens must be at least that (auto sets it)"
    )

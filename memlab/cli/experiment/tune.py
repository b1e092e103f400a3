"""``memlab tune GRID``: search prompts and settings, then prove the winner on held-out owners."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from memlab.cli import _args
from memlab.cli.tools.matching import matcher_from_args

# The search, replays and statistics are imported when the command runs.

__all__ = ["COMMANDS", "register"]

COMMANDS: dict[str, str] = {
    "tune": "search prompts and settings on some owners; prove the best on held-out owners",
}
"""The commands this module adds, with their line in `memlab --help`."""

_EXAMPLE = """examples:
  memlab tune tune.yaml --max-trials 20 --cache-dir .memlab-cache
  memlab tune tune.yaml --max-cost 2.00        # stop before the replays spend $2 (resumable)
  memlab tune tune.yaml --reflect-backend openai:gpt-4o-mini   # also evolve the prompt (GEPA)
  memlab tune tune.yaml --max-time 3600        # start no candidate after an hour (resumable)
  memlab tune tune.yaml --max-calls 5000       # nor after 5000 calls sent to the model

The grid file is a one-lane grid (its base is the starting configuration) with a tune: key
(space, objective, split, max_trials; see docs/tune.md). Everything goes to RUNS_DIR/NAME: the
Optuna study (study.db, resumed by a rerun), one run per candidate (trials/), the held-out runs,
tune.json and tune-report.md (every candidate's settings, scores and prompt diff).
exit codes: 0 a held-out verdict for every primary metric; 1 a verdict is inconclusive (unless
--allow-inconclusive), a replay failed, a read-only cache lacked a reflection reply or the
cost, time, call or token limit stopped the search; 2 bad input."""


def register(subparsers: Any) -> None:
    """Add the ``tune`` command."""
    p = subparsers.add_parser(
        "tune",
        help=COMMANDS["tune"],
        description="Split the grid's owners (seeded) into train, validation and held-out "
        "test; search the tune: space (numeric settings with Optuna, candidate prompts) "
        "scoring each candidate on train and choosing the best on validation; then replay the "
        "best and the starting configuration on the held-out owners and give the paired "
        "verdict per primary metric (as memlab ab), the train-vs-test gap and the search's "
        "cost.",
        epilog=_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("grid", help="a one-lane grid file with a tune: key")
    p.add_argument(
        "--max-trials", type=_args.count, help="candidates in all (default: tune.max_trials)"
    )
    p.add_argument(
        "--max-cost",
        type=float,
        metavar="USD",
        help="stop before the spend of the replays and reflection calls (at the backends' "
        "declared prices) could pass USD; finished candidates are kept and the same command "
        "resumes",
    )
    p.add_argument(
        "--max-time",
        type=_seconds,
        metavar="SECONDS",
        help="start no candidate (and send no reflection call) after SECONDS (default: "
        "tune.max_time); finished candidates are kept, the command exits 1 and the same "
        "command continues",
    )
    p.add_argument(
        "--max-calls",
        type=_args.count,
        metavar="N",
        help="start no candidate, replay or reflection call once the search has sent N calls "
        "to the model (replies from the cache not counted; default: tune.max_calls); finished "
        "candidates are kept, the command exits 1 and the same command with a larger N "
        "continues",
    )
    p.add_argument(
        "--max-total-tokens",
        type=_args.count,
        metavar="N",
        help="the same for the prompt + completion tokens of those calls (default: "
        "tune.max_total_tokens)",
    )
    p.add_argument(
        "--runs-dir",
        type=_args.directory,
        default="runs",
        help="parent of the tune directory (default: runs)",
    )
    p.add_argument(
        "--name", type=_args.run_name, help="the tune directory's name (default: the grid's)"
    )
    p.add_argument(
        "--report",
        action="store_true",
        help="print the report (every candidate's settings, scores, cost and prompt diff "
        "against the starting prompt, as Markdown) instead of the summary",
    )
    p.add_argument(
        "--allow-inconclusive",
        action="store_true",
        help="exit 0 when a held-out verdict is inconclusive (it still says so and why)",
    )
    p.add_argument(
        "--reflect-backend",
        metavar="SPEC",
        help="evolve the update prompt from failure records before the search, rewritten by "
        "this backend (overrides tune.evolve.reflect_backend; sim:PROFILE is the simulated "
        "reflector); needs pip install 'memlab[tune]'",
    )
    _args.add_matcher_option(p)
    _args.add_cache_options(p, "response cache directory (default: no cache)")
    p.add_argument(
        "--workers", type=_args.workers, default=4, help="concurrent replays (default: 4)"
    )
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.set_defaults(func=_tune)


def _seconds(text: str) -> float:
    """A positive, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text[:40]!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text}")
    return value


def _tune(args: argparse.Namespace) -> int:
    _args.single_blas_thread()
    import optuna

    from memlab.backends.caching.cache import CacheMissError, CacheMode
    from memlab.backends.costs.spend import CostLimitError
    from memlab.reporting.tuning.tune import tune
    from memlab.reporting.tuning.tune_budget import CallLimitError, TimeLimitError
    from memlab.reporting.tuning.tune_report import TUNE_REPORT, report_markdown
    from memlab.sweeps.driver import IncompleteSweepError

    optuna.logging.set_verbosity(logging.WARNING)  # the command prints its own summary
    try:
        result = tune(
            args.grid,
            runs_dir=args.runs_dir,
            name=args.name,
            max_trials=args.max_trials,
            max_cost=args.max_cost,
            cache_dir=args.cache_dir,
            cache_mode=CacheMode(args.cache_mode),
            max_workers=args.workers,
            progress=not args.no_progress,
            matcher=matcher_from_args(args),
            reflect_backend=args.reflect_backend,
            max_time=args.max_time,
            max_calls=args.max_calls,
            max_total_tokens=args.max_total_tokens,
        )
    # kept: a rerun resumes (a read-only cache's miss: after recording the reply)
    except (
        IncompleteSweepError,
        CostLimitError,
        TimeLimitError,
        CallLimitError,
        CacheMissError,
    ) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.report:
        print(report_markdown(result), end="")
    else:
        print("\n".join(result.lines()))
        print(f"\nreport: {result.path / TUNE_REPORT}")
    if result.heldout.inconclusive and not args.allow_inconclusive:
        return 1
    return 0

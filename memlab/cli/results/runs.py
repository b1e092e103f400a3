"""``memlab runs``: the past runs under a directory, newest first."""

from __future__ import annotations

import argparse
import json
from typing import Any

from memlab.cli import _args

__all__ = ["COMMANDS", "register"]

COMMANDS: dict[str, str] = {
    "runs": "list past runs: name, date, dataset, lanes, backends, QA, complete",
}
"""The commands this module adds, with their line in `memlab --help`."""

_HEADERS = ("name", "date", "dataset", "lanes", "backends", "qa", "complete")


def register(subparsers: Any) -> None:
    """Add the ``runs`` command."""
    p = subparsers.add_parser(
        "runs",
        help=COMMANDS["runs"],
        description="List the run directories under RUNS_DIR, newest first: name, when the "
        "sweep finished (UTC), dataset, number of configurations (lanes), backends, whether it "
        "has memory QA and whether every replay (and QA call) finished. A directory that cannot "
        "be read is listed as 'unreadable: <reason>'.",
        epilog="examples:\n  memlab runs\n  memlab runs runs/ --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "runs_dir",
        nargs="?",
        default="runs",
        type=_args.existing_directory,
        metavar="RUNS_DIR",
        help="parent directory of run directories (default: runs)",
    )
    p.add_argument("--json", action="store_true", help="one JSON list of runs on stdout")
    p.set_defaults(func=_runs)


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def _runs(args: argparse.Namespace) -> int:
    from memlab.runs.run_index import list_runs

    entries = list_runs(args.runs_dir)
    if args.json:
        print(json.dumps([e.to_dict() for e in entries], indent=2))
        return 0
    if not entries:
        print(f"no runs in {args.runs_dir}")
        return 0
    rows = [
        (e.name, e.date, f"unreadable: {e.problem}")
        if e.problem
        else (
            e.name,
            e.date,
            e.dataset,
            str(e.lanes),
            ",".join(e.backends),
            _yes(e.qa),
            _yes(e.complete),
        )
        for e in entries
    ]
    # An unreadable run's reason fills the rest of its line: it sets no column's width.
    full = [_HEADERS, *(r for r in rows if len(r) == len(_HEADERS))]
    widths = [max(len(r[i]) for r in (full if i > 1 else [_HEADERS, *rows])) for i in range(7)]
    for row in [_HEADERS, *rows]:
        cells = zip(row, widths, strict=False)
        print("  ".join(cell.ljust(width) for cell, width in cells).rstrip())
    return 0

"""``memlab compare``: paired comparison of configurations, with intervals and p-values."""

from __future__ import annotations

import argparse
from typing import Any

from memlab.cli import _args
from memlab.core.files import io_reason
from memlab.scoring.metric_specs import interval_specs

__all__ = ["COMMANDS", "register"]

COMMANDS: dict[str, str] = {
    "compare": "compare configurations paired on owners: deltas, intervals, p-values",
}
"""The commands this module adds, with their line in `memlab --help`."""


def register(subparsers: Any) -> None:
    """Add the ``compare`` command."""
    p = subparsers.add_parser(
        "compare",
        help=COMMANDS["compare"],
        description="Compare run B's configurations with run A's (or, with one run, every "
        "configuration with the run's first one) on the owners both share: the delta of each "
        "rate with a paired bootstrap 95%% interval, a sign-flip permutation p-value, the "
        "Holm-adjusted p-value over every metric and configuration in the table, and the "
        "minimum detectable effect at 80%% power.",
        epilog="examples:\n  memlab compare runs/baseline runs/new-prompt\n"
        "  memlab compare runs/threshold-sweep --baseline-lane thr=0.7\n"
        "  memlab compare runs/a runs/b --metrics recall,precision --csv cmp.csv",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("run_a", type=_args.directory, help="baseline run directory")
    p.add_argument(
        "run_b",
        nargs="?",
        type=_args.directory,
        help="candidate run directory (default: run A's lanes)",
    )
    p.add_argument(
        "--baseline-lane", help="lane id or label of run A to compare with (default: first)"
    )
    rates = ", ".join(spec.column for spec in interval_specs())
    p.add_argument(
        "--metrics", help=f"comma-separated rates (default: all): {rates}", metavar="METRICS"
    )
    _args.add_stat_options(p)
    p.add_argument("--csv", help="also write the full comparison table to this CSV file")
    p.set_defaults(func=_compare)


def _compare(args: argparse.Namespace) -> int:
    # Imported here: pandas and the statistics load when a comparison runs, not for --help.
    from memlab.scoring.comparison import CompareError, compare, comparison_text
    from memlab.scoring.stats import StatOptions
    from memlab.sweeps.run import load_run

    options = StatOptions(resamples=args.resamples, alpha=args.alpha)
    metrics = None
    if args.metrics and args.metrics.strip() != "all":
        metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    run_a = load_run(args.run_a)
    run_b = load_run(args.run_b) if args.run_b else None
    table = compare(
        run_a, run_b, baseline_lane=args.baseline_lane, metrics=metrics, options=options
    )
    if table.empty:
        raise CompareError(f"{run_a.path}: one configuration and no run B: nothing to compare")
    first = table.iloc[0]
    print(
        f"baseline: {first['baseline_run']}: {first['baseline_lane']}; "
        f"{len(table)} comparisons, Holm-corrected at alpha {options.alpha:g}; "
        f"{options.resamples} resamples over owners"
    )
    print(comparison_text(table).to_string(index=False))
    if args.csv:
        try:
            table.to_csv(args.csv, index=False)
        except OSError as exc:
            raise CompareError(f"cannot write {args.csv}: {io_reason(exc)}") from exc
        print(f"wrote {args.csv}")
    return 0

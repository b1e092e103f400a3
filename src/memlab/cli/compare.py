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
        "configuration with the run's first one of its kind: simulated configurations with "
        "the first simulated one) on the owners both share: the delta of each "
        "rate with a paired bootstrap interval, a p-value (significant only when a sign-flip "
        "permutation test and the bootstrap interval both reject), and the minimum detectable "
        "effect at 80% power. The primary metrics (the grid's 'primary:', or --primary) form "
        "the Holm family over every configuration in the table; each one's verdict, interval "
        "and MDE use the level of the Holm step that decided it. The other rates are "
        "exploratory, at 95%. Configurations measured differently (another dataset, owner "
        "set, matcher or judge, a simulated one against a real one, or memory QA answered, "
        "judged or keyed differently: another answerer or model, answer prompt, judge backend "
        "or prompt, conditions or answer key) are refused with exit 2 naming the difference "
        "unless --allow-mixed. The output ends with one line per reason the comparison is "
        "inconclusive (the backend ignores the prompts compared, no test possible with so few "
        "owners, judge verdicts unreadable, replies failing to parse on both sides, a primary "
        "metric not comparable) and the verdict.",
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
    p.add_argument(
        "--primary",
        metavar="METRICS",
        help="comma-separated rates forming the Holm family (default: run A's primary metrics)",
    )
    _args.add_stat_options(p)
    _args.add_allow_mixed(p)
    p.add_argument("--csv", help="also write the full comparison table to this CSV file")
    p.set_defaults(func=_compare)


def _compare(args: argparse.Namespace) -> int:
    # Imported here: pandas and the statistics load when a comparison runs, not for --help.
    _args.single_blas_thread()
    from memlab.reporting.qa import compare_under_judges
    from memlab.reporting.verdict import headline
    from memlab.runs.run import load_run
    from memlab.scoring.comparison import CompareError, compare, comparison_text
    from memlab.scoring.inconclusive import inconclusive_reasons
    from memlab.scoring.stats import StatOptions

    options = StatOptions(resamples=args.resamples, alpha=args.alpha)
    metrics = None
    if args.metrics and args.metrics.strip() != "all":
        metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    primary = None
    if args.primary:
        primary = [m.strip() for m in args.primary.split(",") if m.strip()]
    run_a = load_run(args.run_a)
    run_b = load_run(args.run_b) if args.run_b else None
    table = compare(
        run_a,
        run_b,
        baseline_lane=args.baseline_lane,
        metrics=metrics,
        primary=primary,
        options=options,
        allow_mixed=args.allow_mixed,
    )
    for banner in table.attrs.get("banners", []):
        print(banner)
    if table.empty:
        raise CompareError(f"{run_a.path}: one configuration and no run B: nothing to compare")
    first = table.iloc[0]
    tests = int(table["p_holm"].notna().sum())
    print(
        f"baseline: {first['baseline_run']}: {first['baseline_lane']}; "
        f"{len(table)} comparisons, {tests} primary tests Holm-corrected at alpha "
        f"{options.alpha:g} (the rest exploratory); {options.resamples} resamples over owners"
    )
    print(comparison_text(table).to_string(index=False))
    reasons = inconclusive_reasons(table, power=options.power)
    for reason in reasons:
        print(f"inconclusive: {reason}")
    print(f"verdict: {headline([table], reasons)}")
    robust = compare_under_judges(
        run_a,
        run_b,
        baseline_lane=args.baseline_lane,
        metrics=metrics,
        primary=primary,
        options=options,
        allow_mixed=args.allow_mixed,
    )
    if not robust.empty:
        columns = ["lane", "metric", *(c for c in robust.columns if c.startswith("verdict:"))]
        print("\nmemory QA under every judge (a difference holds only when every judge finds it):")
        print(robust[[*columns, "judge_robust"]].to_string(index=False))
    if args.csv:
        try:
            table.to_csv(args.csv, index=False)
        except OSError as exc:
            raise CompareError(f"cannot write {args.csv}: {io_reason(exc)}") from exc
        print(f"wrote {args.csv}")
    return 0

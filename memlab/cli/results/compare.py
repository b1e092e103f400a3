"""``memlab compare``: paired comparison of configurations, with intervals and p-values."""

from __future__ import annotations

import argparse
import functools
import sys
import textwrap
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from memlab.cli import _args
from memlab.core.base.files import io_reason
from memlab.scoring.metric_specs import interval_specs

if TYPE_CHECKING:
    from pathlib import Path

    import pandas as pd

    from memlab.scoring.comparing.inconclusive import Reason
    from memlab.scoring.inference.stats import StatOptions

__all__ = ["COMMANDS", "register"]

Say = Callable[[str], None]

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
        "metric not comparable) and the verdict. The table fits 120 columns: one block per "
        "configuration, metrics by id, intervals without their level and no p-values; "
        "--wide prints every column, --csv the full table as CSV.",
        epilog="examples:\n  memlab compare runs/baseline runs/new-prompt\n"
        "  memlab compare runs/threshold-sweep --baseline-lane thr=0.7\n"
        "  memlab compare runs/a runs/b --wide\n"
        "  memlab compare runs/a runs/b --metrics recall,precision --csv cmp.csv\n"
        "  memlab compare runs/a runs/b --csv - > cmp.csv",
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
    p.add_argument(
        "--wide",
        action="store_true",
        help="print every column (interval levels, p-values with Holm's, metric titles): "
        "about 260 characters a row",
    )
    p.add_argument(
        "--csv",
        nargs="?",
        const="-",
        metavar="PATH",
        help="also write the full comparison table (every column, numbers unrounded) to this "
        "CSV file; '--csv -' (or --csv last, without a path) prints it to stdout instead of "
        "the table, and the other lines to stderr",
    )
    p.set_defaults(func=_compare)


def _say(text: str, *, stream: TextIO, width: int | None) -> None:
    """Print ``text``, each line wrapped at ``width`` (``None``: as is)."""
    if width is None:
        print(text, file=stream)
        return
    for line in text.split("\n"):
        wrapped = textwrap.wrap(line, width, subsequent_indent="  ", break_on_hyphens=False)
        print("\n".join(wrapped), file=stream)


def _print_table(
    table: pd.DataFrame, args: argparse.Namespace, options: StatOptions, say: Say, where: Path
) -> list[Reason]:
    """The banners, the table (narrow, ``--wide``, or CSV with ``--csv -``), each reason the
    comparison is inconclusive and the verdict; returns the reasons."""
    from memlab.cli.results.compare_view import narrow_text, wide_text
    from memlab.reporting.compare.verdict import headline
    from memlab.scoring.comparing.comparison import CompareError
    from memlab.scoring.comparing.inconclusive import inconclusive_reasons

    for banner in table.attrs.get("banners", []):
        say(banner)
    if table.empty:
        raise CompareError(f"{where}: one configuration and no run B: nothing to compare")
    first = table.iloc[0]
    tests = int(table["p_holm"].notna().sum())
    say(
        f"baseline: {first['baseline_run']}: {first['baseline_lane']}; "
        f"{len(table)} comparisons\n{tests} primary tests Holm-corrected at alpha "
        f"{options.alpha:g} (the rest exploratory); {options.resamples} resamples over owners"
    )
    reasons = inconclusive_reasons(table, power=options.power)
    if args.csv == "-":
        table.to_csv(sys.stdout, index=False)
    else:
        print(wide_text(table, reasons) if args.wide else narrow_text(table, reasons=reasons))
    for reason in reasons:
        say(f"inconclusive: {reason}")
    say(f"verdict: {headline([table], reasons)}")
    return reasons


def _unsettled(robust: pd.DataFrame, reasons: list[Reason]) -> pd.DataFrame:
    """``robust`` with each judged rate a reason concerns said to be inconclusive: under each
    judge ``inconclusive``, in the summary with the reasons (the table stays one line a rate).
    Agreeing judges that could not be read make nothing robust (unreadable verdicts), and on a
    backend blind to the prompts compared every judge's "no change" says nothing (a reason
    about the whole comparison concerns every rate)."""
    from memlab.reporting.qa.qa_section import said_inconclusive
    from memlab.scoring.comparing.inconclusive import inconclusive_text

    said = [
        inconclusive_text(reasons, str(lane), str(metric))
        for lane, metric in zip(robust["lane"], robust["metric"], strict=True)
    ]
    return said_inconclusive(robust, said, "judge_robust")


def _compare(args: argparse.Namespace) -> int:
    # Imported here: pandas and the statistics load when a comparison runs, not for --help.
    _args.single_blas_thread()
    from memlab.cli.results.compare_view import WIDTH, fit
    from memlab.reporting.qa.qa_judges import compare_under_judges
    from memlab.runs.run import load_run
    from memlab.scoring.comparing.comparison import CompareError, compare
    from memlab.scoring.inference.stats import StatOptions

    options = StatOptions(resamples=args.resamples, alpha=args.alpha)
    metrics = None
    if args.metrics and args.metrics.strip() != "all":
        metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    primary = None
    if args.primary:
        primary = [m.strip() for m in args.primary.split(",") if m.strip()]
    run_a = load_run(args.run_a, keep_copies=True)
    run_b = load_run(args.run_b, keep_copies=True) if args.run_b else None
    table = compare(
        run_a,
        run_b,
        baseline_lane=args.baseline_lane,
        metrics=metrics,
        primary=primary,
        options=options,
        allow_mixed=args.allow_mixed,
    )
    to_stdout = args.csv == "-"
    stream = sys.stderr if to_stdout else sys.stdout
    # Lines of prose wrap at the table's width (continuations indented) unless --wide.
    say = functools.partial(_say, stream=stream, width=None if args.wide else WIDTH)
    reasons = _print_table(table, args, options, say, run_a.path)
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
        say("\nmemory QA under every judge (a difference holds only when every judge finds it):")
        shown = _unsettled(robust, reasons)[[*columns, "judge_robust"]]
        lines = (
            shown.to_string(index=False).splitlines()
            if args.wide
            else fit(shown, WIDTH, shrink=["lane"])
        )
        print("\n".join(lines), file=stream)
    if args.csv and not to_stdout:
        try:
            table.to_csv(args.csv, index=False)
        except OSError as exc:
            raise CompareError(f"cannot write {args.csv}: {io_reason(exc)}") from exc
        print(f"wrote {args.csv}")
    for run in (run_a, run_b):  # the next comparison of these runs skips their row parse
        if run is not None:
            run.keep_table_copies()
    return 0

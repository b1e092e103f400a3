"""``memlab report``, ``memlab gate`` and ``memlab validate``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from memlab.cli import _args
from memlab.core.base.files import MAX_REPLY_BYTES, io_reason, read_text
from memlab.errors import excerpt
from memlab.scoring.metric_specs import gate_specs, interval_specs, primary_metrics

if TYPE_CHECKING:
    import pandas as pd

    from memlab.scoring.comparing.inconclusive import Reason

# The commands import what they run when they run (pandas and matplotlib for a report):
# `memlab --help` and argument errors stay fast.

__all__ = ["COMMANDS", "register"]

COMMANDS: dict[str, str] = {
    "report": "write an HTML + Markdown report comparing runs",
    "gate": "exit non-zero when a run misses a threshold or regresses (for CI)",
    "validate": "check an LLM reply (file or stdin) against the JSON contract",
}
"""The commands this module adds, with their line in `memlab --help`."""


def register(subparsers: Any) -> None:
    """Add the ``report``, ``gate`` and ``validate`` commands."""
    p = subparsers.add_parser(
        "report",
        help=COMMANDS["report"],
        description="Compare one or more run directories; the first is the baseline.",
        epilog="example:\n  memlab report runs/baseline runs/new-prompt -o reports/new-prompt/",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "runs",
        nargs="+",
        type=_args.directory,
        help="run directories (the first is the baseline)",
    )
    p.add_argument(
        "-o",
        "--out",
        required=True,
        type=_args.directory,
        help="output directory for index.html and summary.md",
    )
    p.add_argument("--title", default="memlab comparison report", help="report title")
    _args.add_allow_mixed(p)
    p.set_defaults(func=_report)

    _register_gate(subparsers)

    v = subparsers.add_parser(
        "validate",
        help=COMMANDS["validate"],
        description="Run the parse ladder and the contract's JSON Schema on a reply; print every "
        "violation with its JSON Pointer and keyword. Exit 0 when valid, 1 otherwise.",
        epilog="examples:\n  memlab validate reply.txt\n  echo '{}' | memlab validate -\n"
        "  memlab validate reply.txt --strict   # no fence/prose stripping\n"
        "  memlab validate --schema --bounds summary_chars=60,max_new_facts=3",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    v.add_argument("file", nargs="?", default="-", help="reply file, or - for stdin (default)")
    v.add_argument(
        "--strict", action="store_true", help="only the strict rung (whole reply is JSON)"
    )
    v.add_argument("--repair", action="store_true", help="also try the repair rung")
    v.add_argument(
        "--schema",
        action="store_true",
        help="read no reply: print the contract's JSON Schema (bounded by --bounds: the schema "
        "sent for decoding) and the worst-case reply length under those bounds",
    )
    _args.add_bounds_options(v)
    v.set_defaults(func=_validate)


def _report(args: argparse.Namespace) -> int:
    _args.single_blas_thread()
    from memlab.reporting.report import build_report
    from memlab.runs.run import load_run

    runs = [load_run(path, keep_copies=True) for path in args.runs]
    paths = build_report(runs, args.out, title=args.title, allow_mixed=args.allow_mixed)
    for run in runs:  # the next report of these runs skips their row parse
        run.keep_table_copies()
    print(f"wrote {paths.html}\nwrote {paths.markdown}")
    return 0


def _register_gate(subparsers: Any) -> None:
    g = subparsers.add_parser(
        "gate",
        help=COMMANDS["gate"],
        description="Check every configuration of a run against thresholds, and (with "
        "--baseline) against a baseline run with a paired test on the owners both share. "
        "Exit 0 when all hold; exit 1 naming each missed threshold (a metric that cannot be "
        "computed, NaN, misses), each significant regression, and each reason the comparison "
        "with the baseline is inconclusive (unless --allow-inconclusive); exit 2 when a run "
        "cannot be read or the options are invalid.",
        epilog="examples:\n  memlab gate runs/nightly --max-parse-failure 0.05 --min-recall 0.6\n"
        "  memlab gate runs/candidate --baseline runs/main "
        "--no-significant-regression recall,parse_failure_rate\n"
        "  memlab gate runs/nightly --min-recall 0.6 --use-bound   # lower 95% bound >= 0.6\n"
        "  memlab gate runs/candidate --baseline runs/main --no-significant-regression "
        "--tolerance 0.1",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g.add_argument("run", type=_args.directory, help="run directory (the candidate)")
    g.add_argument(
        "--baseline",
        type=_args.directory,
        help="baseline run directory for --no-significant-regression",
    )
    g.add_argument(
        "--no-significant-regression",
        metavar="METRICS",
        nargs="?",
        const="primary",
        help="rates that must not be significantly worse than the baseline's (Holm step-down "
        "over them): 'primary' (the default without a value: the run's primary metrics, its "
        "grid's 'primary:' or those the specs declare), 'all', or comma-separated rates: "
        f"{', '.join(_rates())}",
    )
    g.add_argument(
        "--tolerance",
        metavar="SIZE",
        type=_args.tolerance,
        help="the smallest regression --no-significant-regression must be able to detect: a "
        "fraction for every rate (0.05 = 5 points), or METRIC=SIZE,... in each metric's unit; "
        "a metric whose minimum detectable effect is larger, and whose interval does not rule "
        "such a regression out, fails the gate (default: 0.05 for every rate)",
    )
    _args.add_allow_mixed(g)
    g.add_argument(
        "--allow-inconclusive",
        action="store_true",
        help="pass when the comparison with the baseline cannot tell (the backend ignores the "
        "prompts compared, too few owners for the tolerance, judge verdicts unreadable, replies "
        "failing to parse on both sides, a primary metric not comparable), printing each "
        "reason as a warning; by default the gate fails naming each reason",
    )
    g.add_argument(
        "--baseline-lane",
        help="compare every configuration with this lane (id or label) of the baseline; "
        "default: the lane of the same label, or the baseline's only lane",
    )
    g.add_argument(
        "--use-bound",
        action="store_true",
        help="check thresholds of rates on the pessimistic end of their 95%% interval",
    )
    g.add_argument(
        "--judge",
        metavar="NAME",
        help="the judge whose verdicts the memory-QA thresholds count (default: the QA "
        "step's first judge)",
    )
    _args.add_stat_options(g)
    for name, spec in gate_specs().items():
        metavar = "RATE" if spec.percent else "N"
        g.add_argument(spec.flag, dest=name, type=float, metavar=metavar, help=spec.gate_help())
    g.set_defaults(func=_gate)


def _rates() -> list[str]:
    return [spec.column for spec in interval_specs()]


def _regression_metrics(text: str, primary: tuple[str, ...] | None) -> list[str]:
    from memlab.reporting.compare.gate import ThresholdError

    rates = _rates()
    if text.strip() == "all":
        return rates
    if text.strip() == "primary":
        return list(primary_metrics(primary))
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in rates]
    if unknown or not names:
        raise ThresholdError(
            f"--no-significant-regression: unknown rate {(unknown or [text])[0]!r}; "
            f"rates: {', '.join(rates)}, 'primary' or 'all'"
        )
    return names


def _gate(args: argparse.Namespace) -> int:
    _args.single_blas_thread()
    from memlab.reporting.compare.gate import (
        DEFAULT_TOLERANCE,
        Inconclusive,
        Regression,
        ThresholdError,
        Thresholds,
        Undetectable,
        check_gate,
        check_regressions,
    )
    from memlab.reporting.qa.qa_section import qa_error_notes
    from memlab.runs.run import load_run
    from memlab.scoring.inference.stats import StatOptions

    thresholds = Thresholds(**{name: getattr(args, name) for name in gate_specs()})
    options = StatOptions(resamples=args.resamples, alpha=args.alpha)
    regression = args.no_significant_regression
    if regression is not None and args.baseline is None:
        raise ThresholdError("--no-significant-regression needs --baseline BASELINE_RUN")
    if args.baseline is not None and regression is None:
        raise ThresholdError("--baseline is used by --no-significant-regression METRICS: add it")
    if not thresholds.limits and regression is None:
        print(
            "error: no threshold given; pass at least one --max-*/--min-* flag or "
            "--no-significant-regression",
            file=sys.stderr,
        )
        return 2
    if args.use_bound and not thresholds.limits:
        raise ThresholdError("--use-bound applies to thresholds; pass a --max-*/--min-* flag")
    run = load_run(args.run)
    if args.judge is not None:
        run = run.with_judge(args.judge)
    run.stats = options
    # Answers without a verdict count as wrong in every QA rate gated: say so, whatever passes.
    for note in qa_error_notes([run]):
        print(f"WARNING {note}")
    missed = check_gate(run, thresholds, use_bound=args.use_bound)
    regressions: list[Regression | Undetectable | Inconclusive] = []
    if regression is not None:
        baseline = load_run(args.baseline)
        for note in qa_error_notes([baseline]):
            print(f"WARNING {note}")
        regressions, table = check_regressions(
            run,
            baseline,
            _regression_metrics(regression, run.primary),
            baseline_lane=args.baseline_lane,
            options=options,
            tolerance=DEFAULT_TOLERANCE if args.tolerance is None else args.tolerance,
            allow_mixed=args.allow_mixed,
        )
        for banner in table.attrs.get("banners", []):
            print(banner)
        failed = {(r.lane, r.metric) for r in regressions}
        reasons = [r.reason for r in regressions if isinstance(r, Inconclusive)]
        for _, row in table.iterrows():
            if (row["lane"], row["metric"]) not in failed:
                print(_metric_line(row, reasons))
    unsure = [r for r in regressions if not isinstance(r, Regression)]
    if args.allow_inconclusive:
        for finding in unsure:
            print(f"WARNING {finding}")
        regressions = [r for r in regressions if isinstance(r, Regression)]
    for failure in [*missed, *regressions]:
        print(f"FAILED {failure}")
    return _gate_outcome(missed, regressions, allowed=len(unsure) if args.allow_inconclusive else 0)


def _metric_line(row: pd.Series, reasons: list[Reason]) -> str:
    """The gate's line for a metric that did not fail: ``inconclusive: lane: metric: why`` when
    a reason concerns it (the backend ignores prompts concerns every metric), else ``ok``."""
    from memlab.scoring.comparing.comparison import describe, describe_mde
    from memlab.scoring.comparing.inconclusive import concerning

    lane, metric = str(row["lane"]), str(row["metric"])
    why = concerning(reasons, lane, metric)
    if why:
        return f"inconclusive: {lane}: {metric}: {why}"
    # "no change" has no interval: the MDE says what it could have detected.
    sized = f" (MDE {describe_mde(row)})" if row["verdict"] == "no change" else ""
    return f"ok {lane}: {metric} {describe(row)}{sized}"


def _gate_outcome(missed: list[Any], regressions: list[Any], *, allowed: int) -> int:
    """The gate's last line and exit code."""
    from memlab.reporting.compare.gate import Inconclusive, Undetectable

    undetectable = sum(isinstance(r, Undetectable) for r in regressions)
    inconclusive = sum(isinstance(r, Inconclusive) for r in regressions)
    regressed = len(regressions) - undetectable - inconclusive
    counts = [
        f"{len(missed)} threshold(s) missed" if missed else "",
        f"{regressed} regression(s)" if regressed else "",
        f"{undetectable} regression(s) undetectable" if undetectable else "",
        f"inconclusive: {inconclusive} reason(s)" if inconclusive else "",
    ]
    if missed or regressions:
        print(f"gate failed: {', '.join(c for c in counts if c)}")
        return 1
    if allowed:
        print(f"gate passed (inconclusive: {allowed} reason(s), allowed by --allow-inconclusive)")
        return 0
    print("gate passed")
    return 0


def _validate(args: argparse.Namespace) -> int:
    if args.schema:
        return _print_schema(args)
    from memlab.core.jsondoc.parsing import ParseOptions, parse_reply

    if args.file == "-":
        text = sys.stdin.read()
    else:
        try:
            text = read_text(args.file, what="reply file", max_bytes=MAX_REPLY_BYTES)
        except OSError as exc:  # FileReadError too: a FIFO, a device, invalid UTF-8, a NUL
            reason = io_reason(exc)
            print(f"error: cannot read reply file {excerpt(args.file)}: {reason}", file=sys.stderr)
            return 2
    if args.strict:
        options = ParseOptions.strict_only()
    else:
        options = ParseOptions(lenient=True, repair=args.repair)
    result = parse_reply(text, options)
    if result.ok:
        print(f"valid (rung: {result.rung.value if result.rung else '?'})")
        return 0
    category = result.category.value if result.category else "unknown"
    print(f"invalid: {category}: {result.error}")
    for violation in result.violations:
        print(f"  {violation.pointer or '/'}  [{violation.keyword}]  {violation.message}")
    return 1


def _print_schema(args: argparse.Namespace) -> int:
    from memlab.core.jsondoc.contract import bounded_schema, contract_schema

    schema = contract_schema()
    if args.bounds is not None:
        schema = bounded_schema(schema, args.bounds)
    print(json.dumps(schema, indent=2, ensure_ascii=False))
    print(_args.reply_bound_line(args.bounds, args.backend))
    return 0

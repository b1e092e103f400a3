"""``memlab report``, ``memlab gate`` and ``memlab validate``."""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

from memlab.core.parsing import ParseOptions, parse_reply
from memlab.eval.run import load_run
from memlab.reporting.gate import Thresholds, check_gate
from memlab.reporting.report import build_report

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the ``report``, ``gate`` and ``validate`` commands."""
    p = subparsers.add_parser(
        "report",
        help="write an HTML + Markdown report comparing runs",
        description="Compare one or more run directories; the first is the baseline.",
        epilog="example:\n  memlab report runs/baseline runs/new-prompt -o reports/new-prompt/",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("runs", nargs="+", help="run directories (the first is the baseline)")
    p.add_argument(
        "-o", "--out", required=True, help="output directory for index.html and summary.md"
    )
    p.add_argument("--title", default="memlab comparison report", help="report title")
    p.set_defaults(func=_report)

    g = subparsers.add_parser(
        "gate",
        help="exit non-zero when a run misses a threshold (for CI)",
        description="Check every configuration of a run against thresholds. Exit 0 when all "
        "hold; exit 1 naming each missed threshold (a metric that cannot be computed, NaN, "
        "misses); exit 2 when the run cannot be read or no threshold is given.",
        epilog="example:\n  memlab gate runs/nightly --max-parse-failure 0.05 --min-recall 0.6 "
        "--max-duplicate-rate 0.1",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g.add_argument("run", help="run directory")
    g.add_argument(
        "--max-parse-failure", type=float, help="highest allowed parse-failure rate (0-1)"
    )
    g.add_argument("--min-recall", type=float, help="lowest allowed gold-fact recall (0-1)")
    g.add_argument("--min-precision", type=float, help="lowest allowed precision (0-1)")
    g.add_argument(
        "--max-duplicate-rate", type=float, help="highest allowed near-duplicate rate (0-1)"
    )
    g.add_argument(
        "--max-duplicate-rate-embedding",
        type=float,
        help="highest allowed duplicate rate by embeddings (0-1); the run must have been swept "
        "with --embedding-duplicates",
    )
    g.add_argument("--max-retracted-held", type=int, help="most retracted facts still stored")
    g.add_argument(
        "--max-forbidden-stored", type=int, help="most stored facts with must_not_store text"
    )
    g.set_defaults(func=_gate)

    v = subparsers.add_parser(
        "validate",
        help="check an LLM reply (file or stdin) against the JSON contract",
        description="Run the parse ladder and the contract's JSON Schema on a reply; print every "
        "violation with its JSON Pointer and keyword. Exit 0 when valid, 1 otherwise.",
        epilog="examples:\n  memlab validate reply.txt\n  echo '{}' | memlab validate -\n"
        "  memlab validate reply.txt --strict   # no fence/prose stripping",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    v.add_argument("file", nargs="?", default="-", help="reply file, or - for stdin (default)")
    v.add_argument(
        "--strict", action="store_true", help="only the strict rung (whole reply is JSON)"
    )
    v.add_argument("--repair", action="store_true", help="also try the repair rung")
    v.set_defaults(func=_validate)


def _report(args: argparse.Namespace) -> int:
    runs = [load_run(path) for path in args.runs]
    paths = build_report(runs, args.out, title=args.title)
    print(f"wrote {paths.html}\nwrote {paths.markdown}")
    return 0


def _gate(args: argparse.Namespace) -> int:
    thresholds = Thresholds(
        max_parse_failure=args.max_parse_failure,
        min_recall=args.min_recall,
        min_precision=args.min_precision,
        max_duplicate_rate=args.max_duplicate_rate,
        max_duplicate_rate_embedding=args.max_duplicate_rate_embedding,
        max_retracted_held=args.max_retracted_held,
        max_forbidden_stored=args.max_forbidden_stored,
    )
    if all(getattr(thresholds, f.name) is None for f in fields(thresholds)):
        print("error: no threshold given; pass at least one --max-*/--min-* flag", file=sys.stderr)
        return 2
    run = load_run(args.run)
    failures = check_gate(run, thresholds)
    for failure in failures:
        print(f"FAILED {failure}")
    if failures:
        print(f"gate failed: {len(failures)} threshold(s) missed")
        return 1
    print("gate passed")
    return 0


def _validate(args: argparse.Namespace) -> int:
    if args.file == "-":
        text = sys.stdin.read()
    else:
        try:
            text = Path(args.file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            print(f"error: cannot read reply file {args.file}: {exc}", file=sys.stderr)
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

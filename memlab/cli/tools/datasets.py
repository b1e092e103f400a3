"""``memlab datasets``: validate, summarize and import labeled datasets."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from memlab.datasets.registry import DatasetNotFoundError, resolve_dataset

# The loader (pydantic models, the compiled schema) is imported by the commands that read a
# dataset, so `memlab --help` and argument errors do not pay for it.

__all__ = ["ANSWER_KEYS", "COMMANDS", "register"]

COMMANDS: dict[str, str] = {
    "datasets": "validate, summarize and import labeled datasets",
}
"""The commands this module adds, with their line in `memlab --help`."""

ANSWER_KEYS = ("original", "audited")
"""memlab.datasets.locomo_qa.ANSWER_KEYS, spelled out so that parsing imports no models (a
test keeps the two equal)."""

_EPILOG = """\
PATH is a JSONL file or the name of a bundled dataset (smoke, personas).

examples:
  memlab datasets validate smoke datasets/personas.jsonl
  memlab datasets stats datasets/personas.jsonl
  memlab datasets stats smoke --json
  memlab datasets import-locomo ../shared/datasets/locomo/locomo10.json --out /tmp/locomo.jsonl
  memlab datasets import-locomo ../shared/datasets/locomo/locomo10.json --out /tmp/audited.jsonl \
      --answer-key audited

The format is described in docs/dataset-format.md.
"""


def register(subparsers: Any) -> None:
    """Add the ``datasets`` command group to the top-level parser."""
    parser = subparsers.add_parser(
        "datasets",
        help=COMMANDS["datasets"],
        description="Validate, summarize and import labeled conversation datasets (JSONL).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="datasets_command", metavar="SUBCOMMAND")
    parser.set_defaults(func=lambda _args: _help(parser))

    validate = sub.add_parser(
        "validate",
        help="check files against the format; print every error",
        description="Check dataset files; every error is printed as FILE:LINE: FIELD: MESSAGE. "
        "Exit code 0 when all files are valid, 1 otherwise.",
        epilog="example:\n  memlab datasets validate smoke datasets/personas.jsonl",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    validate.add_argument("paths", nargs="+", metavar="PATH", help="dataset file or bundled name")
    validate.set_defaults(func=_cmd_validate)

    stats = sub.add_parser(
        "stats",
        help="count users, sessions, messages and labels by kind",
        description="Print counts of users, sessions, messages by role, special cases and "
        "labels by kind. Exit code 1 when the file is invalid.",
        epilog="examples:\n  memlab datasets stats datasets/personas.jsonl\n"
        "  memlab datasets stats smoke --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    stats.add_argument("path", metavar="PATH", help="dataset file or bundled name")
    stats.add_argument("--json", action="store_true", help="print the counts as JSON")
    stats.set_defaults(func=_cmd_stats)

    locomo = sub.add_parser(
        "import-locomo",
        help="convert LoCoMo's locomo10.json into this format",
        description="Convert the LoCoMo benchmark (CC BY-NC 4.0) into a JSONL dataset: two "
        "memory owners per conversation, observations as gold facts, the QA items as "
        "questions. Write the output outside the repository (the data must not be committed).",
        epilog="examples:\n  memlab datasets import-locomo "
        "../shared/datasets/locomo/locomo10.json --out /tmp/locomo.jsonl\n"
        "  memlab datasets import-locomo ../shared/datasets/locomo/locomo10.json "
        "--out /tmp/audited.jsonl --answer-key audited",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    locomo.add_argument("src", metavar="SRC", help="path of locomo10.json")
    locomo.add_argument("--out", required=True, metavar="DEST", help="JSONL file to write")
    locomo.add_argument(
        "--answer-key",
        choices=ANSWER_KEYS,
        default="original",
        help="the questions' answers: LoCoMo's own, or corrected by the answer-key audit "
        "(default: original)",
    )
    locomo.add_argument(
        "--audit",
        metavar="PATH",
        help="the audit's errors.json (default for --answer-key audited: audit/errors.json "
        "beside SRC); with --answer-key original, each audited question keeps LoCoMo's answer "
        "and records the audit's, so reports show the original key's ceiling",
    )
    locomo.set_defaults(func=_cmd_import_locomo)


def _help(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _err(text: str) -> None:
    print(text, file=sys.stderr)


def _cmd_validate(args: argparse.Namespace) -> int:
    from memlab.datasets.loader import validate_dataset

    failed = False
    for spec in args.paths:
        try:
            path = resolve_dataset(spec)
        except DatasetNotFoundError as exc:
            _err(f"error: {exc}")
            failed = True
            continue
        errors = validate_dataset(path)
        if errors:
            failed = True
            for error in errors:
                print(error)
            print(f"INVALID {path}: {len(errors)} error(s)")
        else:
            with path.open("rb") as handle:
                owners = sum(1 for _ in handle)
            print(f"OK {path}: {owners} owner(s)")
    return 1 if failed else 0


def _cmd_stats(args: argparse.Namespace) -> int:
    from memlab.datasets.loader import DatasetError, dataset_stats, format_stats, load_dataset

    try:
        owners = load_dataset(resolve_dataset(args.path), collect=True)
    except DatasetNotFoundError as exc:
        _err(f"error: {exc}")
        return 1
    except DatasetError as exc:
        for error in exc.errors:
            print(error)
        _err(f"error: {args.path} is invalid; fix the errors above (memlab datasets validate)")
        return 1
    stats = dataset_stats(owners)
    if args.json:
        print(json.dumps(stats, indent=2, ensure_ascii=False))
    else:
        print(format_stats(stats))
    return 0


def _cmd_import_locomo(args: argparse.Namespace) -> int:
    # A LocomoFormatError or LocomoAuditError (bad source or audit, --out equal to one of
    # them) reaches main: one line, exit 2.
    from memlab.datasets.locomo import import_locomo

    summary = import_locomo(args.src, args.out, answer_key=args.answer_key, audit=args.audit)
    print(summary)
    return 0

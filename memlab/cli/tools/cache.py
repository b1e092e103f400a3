"""``memlab cache``: inspect and prune a response cache directory."""

from __future__ import annotations

import argparse
import json
import re
import sys
from datetime import UTC, datetime, timedelta

from memlab.backends.caching.cache_admin import cache_stats, prune_cache
from memlab.cli import _args
from memlab.errors import excerpt

__all__ = ["COMMANDS", "parse_when", "register"]

COMMANDS: dict[str, str] = {
    "cache": "inspect or prune a response cache directory",
}
"""The commands this module adds, with their line in `memlab --help`."""

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}

_CACHE_EPILOG = """\
The cache holds one JSON file per request: <DIR>/<2 hex>/<sha256>.json, with the request
summary (backend, model, mode, params, messages) and the completion. Commit it to replay runs
offline (cache mode read_only).

examples:
  memlab cache stats .memlab-cache
  memlab cache stats .memlab-cache --json
  memlab cache prune .memlab-cache --model gpt-4o-mini --dry-run
"""

_PRUNE_EPILOG = """\
Criteria combine with AND; at least one (or --all) is required. WHEN is an ISO-8601 time
(2024-05-01, 2024-05-01T12:00:00Z; without a zone it is UTC) or a duration ago: 30m, 12h,
7d, 2w. Cache hits refresh an entry's file time, so --unused-since finds entries no recent
replay needed: note the time, replay your notebooks/runs, then prune --unused-since that time.

examples:
  memlab cache prune .memlab-cache --unused-since 2024-05-01T09:00:00Z
  memlab cache prune .memlab-cache --older-than 30d --dry-run
  memlab cache prune .memlab-cache --model smollm2-135m-instruct-q4_1
  memlab cache prune .memlab-cache --backend openai --older-than 2w
  memlab cache prune .memlab-cache --all
"""


def parse_when(value: str, *, now: datetime | None = None) -> datetime:
    """Parse ``WHEN``: an ISO-8601 time (UTC if no zone) or a duration ago (``7d``, ``12h``)."""
    text = value.strip()
    match = _DURATION.match(text)
    if match:
        seconds = float(match.group(1)) * _UNITS[match.group(2)]
        try:
            return (now or datetime.now(UTC)) - timedelta(seconds=seconds)
        except OverflowError:
            raise argparse.ArgumentTypeError(
                f"duration {excerpt(value)} reaches before the year 1; use a shorter one"
            ) from None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"invalid time {excerpt(value)}: use ISO-8601 (2024-05-01T12:00:00Z) or a duration "
            "such as 30m, 12h, 7d, 2w"
        ) from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _human_bytes(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"  # pragma: no cover


def _cmd_stats(args: argparse.Namespace) -> int:
    stats = cache_stats(args.dir)
    if args.json:
        print(json.dumps(stats.to_dict(), indent=2, sort_keys=True))
        return 0
    data = stats.to_dict()
    print(f"cache:    {args.dir}")
    print(f"entries:  {stats.entries}")
    print(f"size:     {_human_bytes(stats.bytes)} ({stats.bytes} bytes)")
    if stats.entries:
        print(f"recorded: {data['oldest']} .. {data['newest']}")
    if stats.by_model:
        print("by backend:model:")
        width = max(len(name) for name in stats.by_model)
        for name, count in sorted(stats.by_model.items()):
            print(f"  {name:<{width}}  {count}")
    if stats.corrupt_files:
        print(f"unreadable entries: {len(stats.corrupt_files)} (removed by 'memlab cache prune')")
    if stats.temp_files:
        print(f"temporary files from interrupted writes: {stats.temp_files}")
    return 0


def _cmd_prune(args: argparse.Namespace) -> int:
    if not (args.all or args.unused_since or args.older_than or args.model or args.backend):
        print(
            "error: memlab cache prune: give a criterion (--unused-since, --older-than, "
            "--model, --backend) or --all; see --help",
            file=sys.stderr,
        )
        return 2
    result = prune_cache(
        args.dir,
        unused_since=args.unused_since,
        created_before=args.older_than,
        model=args.model,
        backend=args.backend,
        remove_all=args.all,
        dry_run=args.dry_run,
    )
    verb = "would remove" if args.dry_run else "removed"
    print(
        f"{verb} {len(result.removed)} entries ({_human_bytes(result.removed_bytes)}), "
        f"kept {result.kept}"
    )
    if result.temp_files_removed:
        print(f"{verb} {result.temp_files_removed} stale temporary files")
    if args.dry_run or args.verbose_list:
        for path in result.removed:
            print(f"  {path}")
    if result.failed:
        path, reason = result.failed[0]
        print(
            f"error: could not remove {len(result.failed)} file(s) (first: {path}: {reason}); "
            "check that the cache directory is writable",
            file=sys.stderr,
        )
        return 1
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``memlab cache stats`` and ``memlab cache prune``."""
    parser = subparsers.add_parser(
        "cache",
        help=COMMANDS["cache"],
        description="Inspect or prune a memlab response cache directory.",
        epilog=_CACHE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="cache_command", metavar="SUBCOMMAND")

    def _cmd_help(_args: argparse.Namespace) -> int:
        parser.print_help()
        return 2

    parser.set_defaults(func=_cmd_help)

    stats = commands.add_parser(
        "stats",
        help="entries, bytes, by backend and model",
        description="Count the entries of a cache directory by backend and model.",
        epilog="examples:\n  memlab cache stats .memlab-cache\n"
        "  memlab cache stats .memlab-cache --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    stats.add_argument("dir", metavar="DIR", type=_args.existing_directory, help="cache directory")
    stats.add_argument("--json", action="store_true", help="print machine-readable JSON")
    stats.set_defaults(func=_cmd_stats)

    prune = commands.add_parser(
        "prune",
        help="remove entries unused since / older than a time, or of a model",
        description="Remove cache entries matching every given criterion.",
        epilog=_PRUNE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    prune.add_argument("dir", metavar="DIR", type=_args.existing_directory, help="cache directory")
    prune.add_argument(
        "--unused-since",
        type=parse_when,
        metavar="WHEN",
        help="entries not read or written since WHEN",
    )
    prune.add_argument(
        "--older-than",
        type=parse_when,
        metavar="WHEN",
        help="entries recorded before WHEN (e.g. 30d = more than 30 days ago)",
    )
    prune.add_argument("--model", help="only entries of this model id")
    prune.add_argument("--backend", help="only entries of this backend (openai, local, ...)")
    prune.add_argument("--all", action="store_true", help="remove every entry")
    prune.add_argument(
        "--dry-run", action="store_true", help="list what would be removed, remove nothing"
    )
    prune.add_argument(
        "--list", dest="verbose_list", action="store_true", help="list removed files"
    )
    prune.set_defaults(func=_cmd_prune)

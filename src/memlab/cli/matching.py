"""``memlab matcher calibrate|list`` and ``memlab rescore``: fact matchers and their calibration."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from memlab.backends.cache import CachedBackend, CacheMode
from memlab.cli import _args
from memlab.core.llm import Backend
from memlab.matching.base import FactMatcher
from memlab.matching.calibration import SPLITS, calibrate, load_pairs
from memlab.matching.matchers import BackendFactory, matcher_help, resolve_matcher
from memlab.sweeps.rescoring import rescore

__all__ = ["matcher_from_args", "register"]

_CALIBRATE_EPILOG = """\
Runs the matcher over the labeled (gold, stored) pairs and prints its agreement with the
labels, its precision and recall, and a confusion table per kind of pair. The bundled set is
datasets/matching/pairs.jsonl (see docs/matching.md); tune on --split dev, report on test.

examples:
  memlab matcher calibrate
  memlab matcher calibrate --matcher lexical --split test
  memlab matcher calibrate --matcher judge:openai:gpt-4o-mini --cache-dir .memlab-cache
"""

_RESCORE_EPILOG = """\
Recomputes recall, precision, retracted-held and every other session metric of a finished
run with another matcher, from the memory snapshots the run kept: no memory-update call is
made. Rewrites sessions.jsonl and summary.csv and records the matcher in environment.json.
A judge matcher asks its model (lenient and strict prompts); give --cache-dir to cache it.

examples:
  memlab rescore runs/demo
  memlab rescore runs/demo --matcher lexical
  memlab rescore runs/demo --matcher judge:openai:gpt-4o-mini --cache-dir .memlab-cache
"""


def register(subparsers: Any) -> None:
    """Add the ``matcher`` command group and the ``rescore`` command."""
    group = subparsers.add_parser(
        "matcher",
        help="fact matchers: list them, calibrate one against labeled pairs",
        description="Fact matchers decide whether a stored fact states a gold fact.",
        epilog="examples:\n  memlab matcher list\n  memlab matcher calibrate --matcher lexical",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = group.add_subparsers(dest="matcher_command", metavar="COMMAND", required=True)
    c = commands.add_parser(
        "calibrate",
        help="agreement, precision, recall and a confusion table per kind",
        description="Measure a matcher against the labeled calibration pairs.",
        epilog=_CALIBRATE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_matcher_options(c)
    c.add_argument("--pairs", help="pairs file (default: the bundled calibration set)")
    c.add_argument(
        "--split",
        choices=[*SPLITS, "all"],
        default="test",
        help="which pairs to use (default: test)",
    )
    c.add_argument("--errors", action="store_true", help="also list the pairs it got wrong")
    c.add_argument("--json", action="store_true", help="print the numbers as JSON")
    c.set_defaults(func=_calibrate)

    ls = commands.add_parser(
        "list",
        help="the matcher names",
        description="List the matcher names --matcher accepts.",
        epilog="example:\n  memlab matcher list",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ls.set_defaults(func=_list)

    r = subparsers.add_parser(
        "rescore",
        help="recompute a run's metrics with another fact matcher (no LLM replay)",
        description="Recompute every metric of a finished run with another fact matcher.",
        epilog=_RESCORE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument("run", type=_args.directory, help="run directory")
    _add_matcher_options(r)
    r.set_defaults(func=_rescore)


def _add_matcher_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--matcher",
        default="default",
        help="matcher name: " + ", ".join(matcher_help()) + " (default: default)",
    )
    _args.add_cache_options(parser, "response cache for a judge matcher's calls")


def matcher_from_args(args: argparse.Namespace) -> FactMatcher:
    """The matcher ``--matcher`` names; a judge's calls go through ``--cache-dir``."""
    return resolve_matcher(args.matcher, backend_factory=_backend_factory(args))


def _backend_factory(args: argparse.Namespace) -> BackendFactory:
    from memlab.backends.registry import resolve_backend

    def build(spec: str) -> Backend:
        backend = resolve_backend(spec)
        if args.cache_dir and args.cache_mode != CacheMode.OFF.value:
            return CachedBackend(backend, Path(args.cache_dir), mode=CacheMode(args.cache_mode))
        return backend

    return build


def _list(args: argparse.Namespace) -> int:
    for name, description in matcher_help().items():
        print(f"{name:<16} {description}")
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    split = None if args.split == "all" else args.split
    pairs = load_pairs(args.pairs, split=split)
    result = calibrate(matcher_from_args(args), pairs, split=args.split)
    if args.json:
        by_kind = {kind: vars(counts) for kind, counts in sorted(result.by_kind.items())}
        print(json.dumps({**result.summary(), "by_kind": by_kind}, indent=2))
        return 0
    print(result.table())
    if args.errors:
        print()
        for pair, verdict in result.errors:
            print(f"[{pair.id}] wrongly {verdict}: gold {pair.gold!r} / stored {pair.stored!r}")
    return 0


def _rescore(args: argparse.Namespace) -> int:
    run = rescore(args.run, matcher_from_args(args))
    matcher = run.environment.get("matcher", {})
    columns = ["label", "recall", "precision", "retracted_held", "final_facts"]
    print(run.summary[columns].to_string())
    judge = matcher.get("judge")
    if judge:
        print(f"\njudge prompts agree on {judge['agreement']:.1%} of {judge['pairs_judged']} pairs")
        for lane, prompts in judge["lanes"].items():
            cells = ", ".join(f"{p} recall {m['recall']}" for p, m in prompts.items())
            print(f"  {lane}: {cells}")
    print(f"\n{run.path} rescored with matcher {matcher.get('name')}")
    return 0

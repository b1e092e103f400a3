"""``memlab matcher calibrate|audit|list`` and ``memlab rescore``: fact matchers and their
calibration, on the bundled sets or on a run's own pairs."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlab.cli import _args
from memlab.matching.base import matcher_name
from memlab.matching.calibration import SPLITS, Calibration, calibrate, load_pairs
from memlab.matching.matcher_audit import (
    SHEET_NAME,
    AuditSheet,
    agreement_counts,
    judge_sheet,
    read_sheet,
)
from memlab.matching.matchers import BackendFactory, matcher_help, resolve_matcher

if TYPE_CHECKING:
    from memlab.core.pipeline.llm import Backend
    from memlab.matching.base import FactMatcher

# Runs (pandas) and backends are imported by the commands that use them, so `memlab --help`
# and argument errors stay fast.

__all__ = ["COMMANDS", "matcher_from_args", "register"]

COMMANDS: dict[str, str] = {
    "matcher": "fact matchers: list them, calibrate one, audit one on a run",
    "rescore": "recompute a run's metrics with another fact matcher (no LLM replay)",
}
"""The commands this module adds, with their line in `memlab --help`."""

logger = logging.getLogger(__name__)

_CALIBRATE_EPILOG = """\
Runs the matcher over the labeled (gold, stored) pairs and prints its agreement with the
labels, its precision, recall and Cohen's kappa, per style and per kind of pair. The bundled
sets are datasets/matching/pairs.jsonl (style compact), longform.jsonl (style longform) and
preferences.jsonl (style preference; see docs/matching.md); tune on --split dev, report on
test. A labelling sheet from 'memlab matcher audit' (.csv) is measured on its labelled rows,
with estimates for the whole run; --judge BACKEND also has an LLM judge label the sheet and
reports its kappa with the matcher (and with your labels).

examples:
  memlab matcher calibrate
  memlab matcher calibrate --matcher lexical --split test
  memlab matcher calibrate --matcher judge:openai:gpt-4o-mini --cache-dir .memlab-cache
  memlab matcher calibrate --pairs runs/demo/matcher_audit.csv
  memlab matcher calibrate --pairs runs/demo/matcher_audit.csv --judge openai:gpt-4o-mini
"""

_AUDIT_EPILOG = """\
Draws (stored, gold) pairs from every memory snapshot of a finished run into a labelling
sheet: half from the pairs the matcher accepts, half from the nearest pairs it rejects. Fill
the 'label' column with yes or no (a spreadsheet, or memlab.matching.audit_form.labelling_form in
a notebook), then measure the matcher on it with 'memlab matcher calibrate --pairs SHEET'.
Reports of the run show the measured agreement once the sheet has labels.

examples:
  memlab matcher audit runs/demo --sample 60
  memlab matcher audit runs/demo --sample 100 --seed 1 -o my_sheet.csv
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
        help=COMMANDS["matcher"],
        description="Fact matchers decide whether a stored fact states a gold fact.",
        epilog="examples:\n  memlab matcher list\n  memlab matcher calibrate --matcher lexical",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = group.add_subparsers(dest="matcher_command", metavar="COMMAND", required=True)
    _register_calibrate(commands)
    _register_audit(commands)
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
        help=COMMANDS["rescore"],
        description="Recompute every metric of a finished run with another fact matcher.",
        epilog=_RESCORE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument("run", type=_args.directory, help="run directory")
    _add_matcher_options(r)
    r.set_defaults(func=_rescore)


def _register_calibrate(commands: Any) -> None:
    c = commands.add_parser(
        "calibrate",
        help="agreement, precision, recall and kappa per style and kind",
        description="Measure a matcher against the labeled calibration pairs.",
        epilog=_CALIBRATE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_matcher_options(c)
    c.add_argument(
        "--pairs", help="pairs file (.jsonl) or labelling sheet (.csv) (default: the bundled sets)"
    )
    c.add_argument(
        "--split",
        choices=[*SPLITS, "all"],
        default="test",
        help="which pairs to use (default: test)",
    )
    c.add_argument("--errors", action="store_true", help="also list the pairs it got wrong")
    c.add_argument("--json", action="store_true", help="print the numbers as JSON")
    c.add_argument(
        "--judge",
        metavar="BACKEND",
        help="with a labelling sheet: an LLM judge (backend spec) labels it too",
    )
    c.set_defaults(func=_calibrate)


def _register_audit(commands: Any) -> None:
    a = commands.add_parser(
        "audit",
        help="draw a labelling sheet of (stored, gold) pairs from a run",
        description="Draw a labelling sheet from a finished run, stratified by verdict.",
        epilog=_AUDIT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a.add_argument("run", type=_args.existing_directory, help="run directory")
    a.add_argument("--sample", type=_args.count, default=60, help="pairs to draw (default 60)")
    a.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    a.add_argument("-o", "--output", help=f"sheet path (default: RUN/{SHEET_NAME})")
    a.add_argument("--force", action="store_true", help="replace an existing sheet")
    _add_matcher_options(a)
    a.set_defaults(func=_audit)


def _add_matcher_options(parser: argparse.ArgumentParser) -> None:
    _args.add_matcher_option(parser, "matcher name")
    _args.add_cache_options(parser, "response cache for a judge matcher's calls")


def matcher_from_args(args: argparse.Namespace) -> FactMatcher:
    """The matcher ``--matcher`` names; a judge's calls go through ``--cache-dir``.

    When the name resolves to another matcher (``default`` without the embeddings extra is
    ``default-lexical``), a warning says which one scores the run.
    """
    matcher = resolve_matcher(args.matcher, backend_factory=_backend_factory(args))
    became = matcher_name(matcher)
    if args.matcher == "default" and became != "default":
        logger.warning(
            "--matcher default: the embeddings extra is not installed, so the matcher is %s "
            "(the default matcher without word embeddings); install memlab[embeddings] for "
            "the full default matcher",
            became,
        )
    return matcher


def _backend_factory(args: argparse.Namespace) -> BackendFactory:
    from memlab.backends.caching.cache import CachedBackend, CacheMode
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
    if args.pairs and Path(args.pairs).suffix.casefold() == ".csv":
        return _calibrate_sheet(args)
    if args.judge:
        print("error: --judge labels a sheet: give --pairs SHEET.csv", file=sys.stderr)
        return 2
    split = None if args.split == "all" else args.split
    pairs = load_pairs(args.pairs, split=split)
    result = calibrate(matcher_from_args(args), pairs, split=args.split)
    _print_calibration(result, args)
    return 0


def _print_calibration(result: Calibration, args: argparse.Namespace) -> None:
    if args.json:
        print(json.dumps(result.summary(), indent=2))
        return
    print(result.table())
    if args.errors:
        print()
        for pair, verdict in result.errors:
            print(f"[{pair.id}] wrongly {verdict}: gold {pair.gold!r} / stored {pair.stored!r}")


def _calibrate_sheet(args: argparse.Namespace) -> int:
    from memlab.matching.judge import LLMJudgeMatcher

    sheet = read_sheet(args.pairs)
    if args.judge:
        judge = LLMJudgeMatcher(_backend_factory(args)(args.judge))
        sheet = judge_sheet(sheet, judge)
        sheet.write()
    matcher = matcher_from_args(args)
    result = calibrate(matcher, sheet.pairs(), split="run")
    report = _sheet_report(sheet, result)
    if args.json:
        print(json.dumps({**result.summary(), **report}, indent=2))
        return 0
    if result.total.pairs:
        print(result.table())
    else:
        print(f"{sheet.path}: no labelled rows yet (fill the 'label' column with yes or no)")
    for line in _sheet_lines(report):
        print(line)
    return 0


def _sheet_report(sheet: AuditSheet, result: Calibration) -> dict[str, object]:
    """Run-level estimates (for the matcher the sheet was drawn with) and judge kappas."""
    report: dict[str, object] = {"labelled": len(sheet.labelled()), "rows": len(sheet.rows)}
    if result.matcher == sheet.matcher and result.total.pairs:
        report["run_estimate"] = sheet.estimate().summary()
    judged = {}
    for prompt in ("judge_lenient", "judge_strict"):
        vs_matcher = agreement_counts(sheet, prompt, "verdict")
        if vs_matcher.pairs:
            vs_labels = agreement_counts(sheet, "label", prompt)
            judged[prompt] = {
                "pairs": vs_matcher.pairs,
                "kappa_vs_matcher": round(vs_matcher.kappa, 4),
                "agreement_vs_matcher": round(vs_matcher.agreement, 4),
                "kappa_vs_labels": round(vs_labels.kappa, 4) if vs_labels.pairs else None,
            }
    if judged:
        report["judge"] = judged
    return report


def _sheet_lines(report: dict[str, object]) -> list[str]:
    lines = [f"labelled rows: {report['labelled']} of {report['rows']}"]
    estimate = report.get("run_estimate")
    if isinstance(estimate, dict):
        lines.append(
            f"estimated over the run's candidate pairs (strata weighted by size): agreement "
            f"{estimate['run_agreement']:.1%}, precision {estimate['run_precision']:.1%}, "
            f"recall {estimate['run_recall']:.1%}"
        )
    judge = report.get("judge")
    if isinstance(judge, dict):
        for prompt, numbers in judge.items():
            vs_labels = numbers["kappa_vs_labels"]
            lines.append(
                f"{prompt}: kappa with the matcher {numbers['kappa_vs_matcher']:.2f} "
                f"(agreement {numbers['agreement_vs_matcher']:.1%} on {numbers['pairs']} pairs)"
                + (f", kappa with your labels {vs_labels:.2f}" if vs_labels is not None else "")
            )
    return lines


def _audit(args: argparse.Namespace) -> int:
    from memlab.postrun.audit import draw_sheet, sheet_path
    from memlab.runs.run import load_run

    run = load_run(args.run)
    sheet = draw_sheet(run, matcher_from_args(args), sample=args.sample, seed=args.seed)
    target = Path(args.output) if args.output else sheet_path(run)
    inside = target.absolute().is_relative_to(run.path.absolute())
    with run.dir.lock("matcher audit") if inside else contextlib.nullcontext():
        sheet.write(target, force=args.force)
    sizes = {row.stratum: row.stratum_size for row in sheet.rows}
    drawn = {s: sum(1 for row in sheet.rows if row.stratum == s) for s in sizes}
    cells = ", ".join(f"{s} {drawn[s]} of {sizes[s]}" for s in sorted(sizes))
    print(f"{target}: {len(sheet.rows)} pairs drawn ({cells}) with matcher {sheet.matcher}")
    print(
        f"fill the 'label' column with yes or no, then: memlab matcher calibrate --pairs {target}"
    )
    return 0


def _rescore(args: argparse.Namespace) -> int:
    from memlab.postrun.rescoring import rescore

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

"""``memlab judge audit``: measure a QA judge against the judge calibration set."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlab.cli import _args

if TYPE_CHECKING:
    from memlab.qa.qa_prompts import JudgePrompt
    from memlab.scoring.qa.judge_audit import JudgeAudit, Tally

# The backends and the calibration set are loaded when the command runs, so `memlab --help`
# and argument errors stay fast.

__all__ = ["COMMANDS", "audit_lines", "register"]

COMMANDS: dict[str, str] = {
    "judge": "QA judges: audit one against the judge calibration set",
}
"""The commands this module adds, with their line in `memlab --help`."""

_AUDIT_EPILOG = """\
Grades the 240 triples of the judge calibration set (question, gold answer, candidate answer,
verdict decided by reading; memlab/qa/data/judge_calibration.jsonl) under each judge prompt,
with the requests a QA run sends, and prints per judge prompt: agreement with the set's
verdicts, Cohen's kappa, the share of wrong-but-on-topic answers it accepts, and per kind of
triple. Replies with no single verdict are counted as unreadable and failed calls as failed,
apart from the graded triples that agreement and kappa are computed over. The simulated
model ('sim:') is told each triple's verdict and grades it with its profile's declared
leniency, so its expected agreement is known.

With --run RUN instead of SPEC, audits the judge backend and judge prompts that graded the
run's memory QA, at its judge settings, and keeps the result in the run
(RUN/qa/judge_audits.json): the run's report then shows each judge's audited agreement, kappa
and on-topic wrong answers accepted beside its band. An audit is shown only for the judge it
measured: the same prompt text (hash), backend and model, and settings.

examples:
  memlab judge audit sim:careful
  memlab judge audit --run runs/nightly --cache-dir .memlab-cache
  memlab judge audit openai:gpt-4o-mini --cache-dir .memlab-cache --out judge_audit.json
  memlab judge audit local:smollm2 --judges strict,prompts/picky.yaml --by-kind
  memlab judge audit openai:gpt-4o-mini --set my_triples.jsonl
"""


def register(subparsers: Any) -> None:
    """Add the ``judge`` command group."""
    group = subparsers.add_parser(
        "judge",
        help=COMMANDS["judge"],
        description="QA judges grade answers against a reference; audit one before trusting it.",
        epilog="example:\n  memlab judge audit sim:careful",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = group.add_subparsers(dest="judge_command", metavar="COMMAND", required=True)
    a = commands.add_parser(
        "audit",
        help="agreement, kappa and on-topic wrong answers accepted, per judge prompt",
        description="Audit a judge backend's prompts on the judge calibration set.",
        epilog=_AUDIT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a.add_argument("spec", metavar="SPEC", nargs="?", help="the judge's backend, e.g. sim:careful")
    a.add_argument(
        "--run",
        metavar="RUN",
        type=_args.existing_directory,
        help="instead of SPEC: audit the judges of this run's memory QA and keep the audit in it",
    )
    a.add_argument(
        "--judges",
        metavar="NAMES",
        help="comma-separated judge prompts, each a name or a prompt file (every prompt it "
        "defines is audited) (default: lenient,strict)",
    )
    a.add_argument(
        "--judge-prompts",
        nargs="+",
        default=[],
        metavar="PATH",
        help="judge prompt files or directories whose prompts --judges can name",
    )
    a.add_argument("--set", metavar="FILE", help="calibration file (default: the bundled set)")
    a.add_argument("--out", metavar="FILE", help="also write the audit as JSON to FILE")
    a.add_argument("--by-kind", action="store_true", help="also print agreement per kind")
    a.add_argument(
        "--max-tokens",
        type=_args.count,
        help="longest judge reply, in tokens (default: 32, as in a QA run)",
    )
    _args.add_cache_options(a, "response cache directory for the verdicts")
    a.add_argument("--workers", type=_args.workers, default=4, help="concurrent calls (default: 4)")
    # A usage error found after parsing (SPEC or --run) is reported as the parser's own.
    a.set_defaults(func=_audit, usage_error=a.error)


def _judges(names: str, sources: list[str]) -> list[JudgePrompt]:
    """The judge prompts ``names`` names: a name, or a file whose every prompt is audited."""
    from memlab.core.prompt_template import PromptError
    from memlab.core.prompts import looks_like_path
    from memlab.qa.qa_prompts import judge_prompts

    registry = judge_prompts()
    chosen: list[JudgePrompt] = []
    for source in sources:
        registry.load_path(source)
    for name in (part.strip() for part in names.split(",")):
        if not name:
            continue
        if looks_like_path(name):
            if not Path(name).is_file():
                raise PromptError(f"--judges: prompt file {name!r} does not exist")
            chosen.extend(registry.load_file(name, replace=True))
        else:
            chosen.append(registry.get(name))
    if not chosen:
        raise PromptError("--judges: name at least one judge prompt (e.g. lenient,strict)")
    return chosen


def _run_audit(args: argparse.Namespace) -> JudgeAudit:
    """The audit of the judges of ``args.run``, kept in the run."""
    from memlab.backends.caching.cache import CacheMode
    from memlab.postrun.judge_audit_step import audit_run_judges
    from memlab.qa.judge_calibration import load_judge_calibration

    given = [
        flag
        for flag, value in (
            ("SPEC", args.spec),
            ("--judges", args.judges),
            ("--judge-prompts", args.judge_prompts),
            ("--max-tokens", args.max_tokens),
        )
        if value
    ]
    if given:
        args.usage_error(
            f"--run audits the run's own judges: drop {', '.join(given)} (they come from the "
            "run's QA manifest)"
        )
    return audit_run_judges(
        args.run,
        calibration=load_judge_calibration(args.set),
        cache_dir=args.cache_dir,
        cache_mode=CacheMode(args.cache_mode),
        max_workers=args.workers,
    )


def _spec_audit(args: argparse.Namespace) -> JudgeAudit:
    """The audit of the judge backend ``args.spec`` under the prompts ``args.judges``."""
    from memlab.backends.caching.cache import CacheMode
    from memlab.core.pipeline.llm import GenerationParams
    from memlab.qa.judge_calibration import load_judge_calibration
    from memlab.scoring.qa.judge_audit import audit_backend

    # Prompts and the set are read before any call: a bad file costs nothing.
    judges = _judges(args.judges or "lenient,strict", args.judge_prompts)
    calibration = load_judge_calibration(args.set)
    return audit_backend(
        args.spec,
        judges,
        calibration,
        params=GenerationParams(temperature=0.0, max_tokens=args.max_tokens or 32, seed=0),
        cache_dir=args.cache_dir,
        cache_mode=CacheMode(args.cache_mode),
        max_workers=args.workers,
    )


def _audit(args: argparse.Namespace) -> int:
    from memlab.core.base.atomic import atomic_write_text
    from memlab.postrun.judge_audit_step import JUDGE_AUDITS

    if args.run is None and args.spec is None:
        args.usage_error("name the judge's backend (SPEC) or a run (--run RUN)")
    audit = _run_audit(args) if args.run is not None else _spec_audit(args)
    if args.out:
        text = json.dumps(audit.to_json(), indent=2, ensure_ascii=False) + "\n"
        atomic_write_text(args.out, text)
    print("\n".join(audit_lines(audit, by_kind=args.by_kind)))
    failed = sum(score.total.failed for score in audit.scores)
    if failed:
        kept = " (the audit is not kept in the run)" if args.run is not None else ""
        print(
            f"error: {failed} judge call(s) failed{kept}; fix the backend and run the audit "
            "again (with --cache-dir only the failed calls are sent again)",
            file=sys.stderr,
        )
        return 1
    if args.run is not None:
        print(f"kept in {Path(args.run) / JUDGE_AUDITS}: the run's report shows it beside the band")
    return 0


def _pct(value: float) -> str:
    return "-" if value != value else f"{value:.1%}"


def _num(value: float) -> str:
    return "-" if value != value else f"{value:.2f}"


def audit_lines(audit: JudgeAudit, *, by_kind: bool = False) -> list[str]:
    """The audit as the command prints it: a table per judge prompt, per kind on request,
    and a line naming the unreadable verdicts and failed calls."""
    from memlab.backends.registry import SIMULATED_MARK

    calibration = audit.calibration
    simulated = f" {SIMULATED_MARK}" if audit.backend_identity.get("simulated") else ""
    lines = [
        f"judge audit of {audit.backend}{simulated} on {len(calibration.triples)} triples of "
        f"{calibration.source} (sha256 {calibration.sha256[:12]})",
        f"{'judge':<16} {'triples':>7} {'graded':>6} {'unreadable':>10} {'failed':>6} "
        f"{'agreement':>9} {'kappa':>6} {'accepted':>8}  on-topic wrong accepted",
    ]
    for score in audit.scores:
        t, w = score.total, score.on_topic_wrong
        taken = w.counts.wrong_accepted
        lines.append(
            f"{score.judge:<16} {t.n:>7} {t.graded:>6} {t.unreadable:>10} {t.failed:>6} "
            f"{_pct(t.agreement):>9} {_num(t.kappa):>6} {_pct(t.accepted):>8}  "
            f"{_pct(w.accepted)} ({taken} of {w.graded})"
        )
    if by_kind:
        lines += ["", *_kind_lines(audit)]
    missing = [
        f"{s.judge} {s.total.unreadable} unreadable, {s.total.failed} failed"
        for s in audit.scores
        if s.total.unreadable or s.total.failed
    ]
    lines.append(
        "not graded (counted apart, never as wrong; agreement and kappa are over the graded "
        f"triples): {'; '.join(missing)}"
        if missing
        else "every reply held one readable verdict"
    )
    return lines


def _kind_lines(audit: JudgeAudit) -> list[str]:
    kinds: dict[str, list[bool]] = {}
    for triple in audit.calibration.triples:
        kinds.setdefault(triple.kind, []).append(triple.correct)
    header = f"{'agreement per kind':<22} {'triples':>7} {'set says':>14}"
    lines = [header + "".join(f" {s.judge:>16}" for s in audit.scores)]
    for kind, verdicts in kinds.items():
        right = sum(verdicts)
        says = (
            "CORRECT"
            if right == len(verdicts)
            else "WRONG"
            if not right
            else f"{right} C, {len(verdicts) - right} W"
        )
        cells = "".join(f" {_cell(s.by_kind[kind]):>16}" for s in audit.scores)
        lines.append(f"{kind:<22} {len(verdicts):>7} {says:>14}{cells}")
    return lines


def _cell(tally: Tally) -> str:
    shown = _pct(tally.agreement)
    return shown if tally.graded == tally.n else f"{shown} ({tally.graded}/{tally.n})"

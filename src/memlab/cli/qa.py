"""``memlab qa``: ask every configuration's memory in a run the dataset's questions."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from memlab.cli import _args
from memlab.cli.matching import matcher_from_args

if TYPE_CHECKING:
    from memlab.sweeps.qa_spec import QASpec

# The QA machinery (pandas, the backends, the run reader) is imported when the command runs,
# so `memlab --help` and argument errors stay fast.

__all__ = ["COMMANDS", "register"]

COMMANDS: dict[str, str] = {
    "qa": "ask every configuration's memory the dataset's questions, grade the answers",
}
"""The commands this module adds, with their line in `memlab --help`."""

_EXAMPLE = """examples:
  memlab qa runs/nightly --answer-backend local:smollm2 --cache-dir cache
  memlab qa runs/nightly --answer-backend openai:gpt-4o-mini --judges lenient,strict \\
      --conditions memory,none,gold_memory --cache-dir cache
  memlab qa runs/nightly          # the settings of the grid's qa: key

Answers and verdicts go through the response cache: an interrupted QA step run again sends
only what is missing.
"""


def register(subparsers: Any) -> None:
    """Add the ``qa`` command."""
    from memlab.qa.conditions import CONDITIONS

    p = subparsers.add_parser(
        "qa",
        help=COMMANDS["qa"],
        description="Add memory QA to a run: after each question's session, answer it from "
        "every configuration's memory (through the lane's injection budget and policy) and "
        "from the baselines, grade each answer with every judge prompt, and attribute each "
        "wrong answer from memory to a cause. Settings come from the grid's qa: key; the "
        "options below replace them.",
        epilog=_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("run", type=_args.directory, help="run directory")
    p.add_argument("--answer-backend", metavar="SPEC", help="backend that answers")
    p.add_argument("--answer-prompt", metavar="NAME", help="answer prompt (default: default)")
    p.add_argument(
        "--judges", metavar="NAMES", help="comma-separated judge prompts (default: strict,lenient)"
    )
    p.add_argument("--judge-backend", metavar="SPEC", help="backend of the judges")
    p.add_argument(
        "--conditions",
        metavar="NAMES",
        help=f"comma-separated conditions (default: all): {', '.join(CONDITIONS)}",
    )
    _args.add_cache_options(p, "response cache directory for answers and verdicts")
    p.add_argument("--workers", type=_args.workers, default=8, help="concurrent calls (default: 8)")
    p.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="exit 0 even when some calls failed (their answers count as wrong)",
    )
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument(
        "--matcher",
        default="default",
        help="fact matcher that decides which stored fact holds an evidence fact",
    )
    p.set_defaults(func=_qa)


_OPTIONS = {
    "answer_backend": "answer_backend",
    "answer_prompt": "answer_prompt",
    "judge_backend": "judge_backend",
}
_LISTS = {"judges": "judges", "conditions": "conditions"}


def _spec(args: argparse.Namespace, grid_spec: QASpec | None) -> QASpec:
    from pydantic import ValidationError

    from memlab.sweeps.qa_spec import QAError, QASpec

    settings: dict[str, Any] = grid_spec.model_dump() if grid_spec is not None else {}
    for option, key in _OPTIONS.items():
        if getattr(args, option) is not None:
            settings[key] = getattr(args, option)
    for option, key in _LISTS.items():
        text = getattr(args, option)
        if text is not None:
            settings[key] = [part.strip() for part in text.split(",") if part.strip()]
    if "answer_backend" not in settings:
        raise QAError(
            f"{args.run}: no QA settings: the run's grid has no qa: key; give "
            "--answer-backend SPEC (e.g. local:smollm2)"
        )
    try:
        return QASpec.model_validate(settings)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise QAError(f"qa setting {where}: {first['msg']}") from None


def _qa(args: argparse.Namespace) -> int:
    from memlab.backends.cache import CacheMode
    from memlab.reporting.qa import qa_text
    from memlab.sweeps.qa_step import IncompleteQAError, add_qa
    from memlab.sweeps.run import load_run

    run = load_run(args.run)
    spec = _spec(args, run.grid.qa)
    status = 0
    try:
        run = add_qa(
            run,
            spec,
            cache_dir=args.cache_dir,
            cache_mode=CacheMode(args.cache_mode),
            max_workers=args.workers,
            progress=not args.no_progress,
            matcher=matcher_from_args(args),
            allow_incomplete=args.allow_incomplete,
        )
    except IncompleteQAError as exc:
        run, status = exc.run, 1
        print(f"error: {exc}", file=sys.stderr)
    print(qa_text(run))
    return status

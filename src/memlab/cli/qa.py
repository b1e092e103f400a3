"""``memlab qa``: ask every configuration's memory in a run the dataset's questions."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlab.cli import _args
from memlab.cli.matching import matcher_from_args

if TYPE_CHECKING:
    from memlab.core.qa_prompts import AnswerPrompt, JudgePrompt
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
  memlab qa runs/nightly --answer-prompt prompts/agent.txt --judges strict,prompts/picky.yaml
  memlab qa runs/nightly --curve-every 1   # then ask correct answers again after later sessions

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
    p.add_argument(
        "--answer-prompt",
        metavar="NAME|FILE",
        help="answer prompt: a name, or a prompt file defining one (default: default)",
    )
    p.add_argument(
        "--judges",
        metavar="NAMES",
        help="comma-separated judge prompts, each a name or a prompt file defining one "
        "(default: strict,lenient)",
    )
    for kind, option in (("answer", "--answer-prompt"), ("judge", "--judges")):
        p.add_argument(
            f"--{kind}-prompts",
            nargs="+",
            default=[],
            metavar="PATH",
            help=f"{kind} prompt files or directories whose prompts {option} can name",
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
        "--curve-every",
        type=_args.curve_every,
        metavar="N",
        help="the consolidation curve: ask each question answered correctly from memory again "
        "after every N-th later session (written to qa/curve.jsonl)",
    )
    p.add_argument(
        "--matcher",
        default="default",
        help="fact matcher that decides which stored fact holds an evidence fact",
    )
    p.set_defaults(func=_qa, interrupted=INTERRUPTED)


INTERRUPTED = (
    "interrupted; run the same command again to finish the QA step (with --cache-dir, the "
    "answers and verdicts already received are not asked again)"
)
"""The line after Ctrl-C of ``memlab qa``."""


_OPTIONS = {
    "answer_backend": "answer_backend",
    "answer_prompt": "answer_prompt",
    "judge_backend": "judge_backend",
}
_LISTS = {"judges": "judges", "conditions": "conditions"}


def _spec(args: argparse.Namespace, grid_spec: QASpec | None, grid_dir: Path) -> QASpec:
    from pydantic import ValidationError

    from memlab.sweeps.qa_spec import QAError, QASpec

    settings: dict[str, Any] = grid_spec.model_dump() if grid_spec is not None else {}
    # The grid's prompt files are relative to its folder; the options' to the working one.
    for key in ("answer_prompts", "judge_prompts"):
        settings[key] = [str(grid_dir / path) for path in settings.get(key, [])]
        settings[key] += [str(Path(path).absolute()) for path in getattr(args, key)]
    for option, key in _OPTIONS.items():
        if getattr(args, option) is not None:
            settings[key] = getattr(args, option)
    for option, key in _LISTS.items():
        text = getattr(args, option)
        if text is not None:
            settings[key] = [part.strip() for part in text.split(",") if part.strip()]
    from memlab.core.prompts import looks_like_path
    from memlab.core.qa_prompts import AnswerPrompt, JudgePrompt

    # A prompt given as a file: the file becomes a prompt source, its one prompt the choice.
    if looks_like_path(settings.get("answer_prompt", "")):
        settings["answer_prompt"] = _prompt_file(settings, "answer_prompts", AnswerPrompt)
    settings["judges"] = [
        _prompt_file(settings, "judge_prompts", JudgePrompt, n) if looks_like_path(n) else n
        for n in settings.get("judges", ["strict", "lenient"])
    ]
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


def _prompt_file(
    settings: dict[str, Any],
    key: str,
    kind: type[AnswerPrompt] | type[JudgePrompt],
    path: str | None = None,
) -> str:
    """Add the prompt file ``path`` (default: the answer prompt setting) to the ``key`` sources
    and return the name of the one prompt it defines."""
    from memlab.core.prompts import PromptError, TemplateRegistry
    from memlab.sweeps.qa_spec import QAError

    path = str(Path(path or settings["answer_prompt"]).absolute())
    try:
        variants = TemplateRegistry(kind).load_file(path)
    except PromptError as exc:
        raise QAError(str(exc)) from None
    if len(variants) != 1:
        names = ", ".join(v.name for v in variants)
        raise QAError(
            f"{path}: defines {len(variants)} prompts ({names}); add it with "
            f"--{key.replace('_', '-')} and name one of them"
        )
    settings[key] = [*settings.get(key, []), path]
    return variants[0].name


def _qa(args: argparse.Namespace) -> int:
    from memlab.backends.cache import CacheMode
    from memlab.reporting.qa import qa_text
    from memlab.sweeps.qa_spec import resolve_prompts
    from memlab.sweeps.qa_step import IncompleteQAError, add_qa
    from memlab.sweeps.run import load_run

    run = load_run(args.run)
    spec = _spec(args, run.grid.qa, run.grid.base_dir)
    # Prompt files are read before anything is sent or written: a bad one changes nothing.
    resolve_prompts(spec)
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
    if args.curve_every is not None and status == 0:
        _curve(run, args)
    return status


def _curve(run: Any, args: argparse.Namespace) -> None:
    """Ask the run's correct answers again after later sessions; print the curve."""
    from memlab.backends.cache import CacheMode
    from memlab.reporting.memory_time import curve_numbers
    from memlab.sweeps.consolidation import add_curve

    add_curve(
        run,
        every=args.curve_every,
        cache_dir=args.cache_dir,
        cache_mode=CacheMode(args.cache_mode),
        max_workers=args.workers,
        progress=not args.no_progress,
    )
    print("\nconsolidation curve (answers asked again after later sessions; 95% intervals)")
    print(curve_numbers(run).to_string(index=False))

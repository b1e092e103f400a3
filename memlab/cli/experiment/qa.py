"""``memlab qa``: ask every configuration's memory in a run the dataset's questions."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from memlab.cli import _args
from memlab.cli.experiment import qa_options
from memlab.cli.tools.matching import matcher_from_args

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
  memlab qa runs/nightly --forgetting      # then the forgetting operating curve of tiered lanes

Answers and verdicts go through the response cache: an interrupted QA step run again sends
only what is missing.
"""


def register(subparsers: Any) -> None:
    """Add the ``qa`` command."""
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
    qa_options.add_qa_options(p, max_tokens_flags=("--max-tokens", "--answer-max-tokens"))
    _args.add_cache_options(p, "response cache directory for answers and verdicts")
    p.add_argument("--workers", type=_args.workers, default=8, help="concurrent calls (default: 8)")
    p.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="exit 0 even when some calls failed (their answers count as wrong)",
    )
    _args.add_max_judge_errors(p)
    p.add_argument(
        "--local-batch",
        type=_args.local_batch,
        metavar="LANES",
        help="decode up to LANES concurrent greedy calls of the local model together, the "
        "shared prompt prefix kept (e.g. --workers 4 --local-batch 4; replaces the grid's "
        "local_batch:; answers and cache keys unchanged)",
    )
    _args.add_cost_options(p, "the QA step")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument(
        "--curve-every",
        type=_args.curve_every,
        metavar="N",
        help="the consolidation curve: ask each question answered correctly from memory again "
        "after every N-th later session (written to qa/curve.jsonl)",
    )
    p.add_argument(
        "--forgetting",
        action="store_true",
        help="the forgetting operating curve: ask every answerable question of each tiered "
        "configuration again after every later session, compare retained answers and memory "
        "size with the seed default's lane (needs one), print the table and keep it in "
        "qa/forgetting.jsonl (memlab report shows it)",
    )
    p.add_argument(
        "--matcher",
        help="fact matcher that decides which stored fact holds an evidence fact (default: "
        "the matcher that scored the run, as environment.json records it)",
    )
    p.set_defaults(func=_qa, interrupted=INTERRUPTED)


INTERRUPTED = (
    "interrupted; run the same command again to finish the QA step (with --cache-dir, the "
    "answers and verdicts already received are not asked again)"
)
"""The line after Ctrl-C of ``memlab qa``."""


def _qa(args: argparse.Namespace) -> int:
    from memlab.backends.caching.cache import CacheMode
    from memlab.backends.costs.spend import CostLimitError
    from memlab.grids.qa_spec import resolve_prompts
    from memlab.postrun.qa_step import IncompleteQAError, JudgeErrorsError, run_qa
    from memlab.reporting.qa.qa_section import qa_text
    from memlab.runs.run import load_run

    run = load_run(args.run)
    if args.forgetting:
        _check_forgetting(run)  # before anything is asked or written
    spec = qa_options.qa_spec(args, run.grid.qa, run.grid.base_dir)
    # Prompt files are read before anything is sent or written: a bad one changes nothing.
    resolve_prompts(spec)
    if args.dry_run:
        from memlab.postrun.qa_estimate import dry_run_qa

        estimate = dry_run_qa(
            run,
            spec,
            cache_dir=args.cache_dir,
            cache_mode=CacheMode(args.cache_mode),
            forgetting=args.forgetting,
        )
        print("\n".join(estimate.lines(args.rpm, args.tpm)))
        return 0
    status = 0
    # One cost limit and one pace for the QA step and the curves after it.
    options = _qa_options(args, run)
    try:
        run = run_qa(run, spec, options)
    except CostLimitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except (IncompleteQAError, JudgeErrorsError) as exc:
        run, status = exc.run, 1
        print(f"error: {exc}", file=sys.stderr)
    print(qa_text(run))
    if args.curve_every is not None and status == 0:
        try:
            _curve(run, args.curve_every, options)
        except CostLimitError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    if args.forgetting and status == 0:
        try:
            _forgetting(run, options)
        except CostLimitError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    return status


def _qa_options(args: argparse.Namespace, run: Any) -> Any:
    """The QA step's :class:`~memlab.postrun.qa_step.QAOptions` on ``run`` from the command
    line (``--rpm``/``--tpm`` over the run's grid ``rate_limit:``)."""
    from memlab.backends.caching.cache import CacheMode
    from memlab.backends.costs.spend import SpendLimit
    from memlab.backends.local.llama_batch import BatchOptions
    from memlab.postrun.qa_step import QAOptions, qa_rates

    batch = BatchOptions(lanes=args.local_batch) if args.local_batch is not None else None
    return QAOptions(
        cache_dir=args.cache_dir,
        cache_mode=CacheMode(args.cache_mode),
        max_workers=args.workers,
        progress=not args.no_progress,
        matcher=matcher_from_args(args) if args.matcher is not None else None,
        allow_incomplete=args.allow_incomplete,
        max_judge_errors=args.max_judge_errors,
        spend=SpendLimit(args.max_cost) if args.max_cost is not None else None,
        rates=qa_rates(run, _args.rate_limit_from_args(args)),
        batch=batch,
    )


def _curve(run: Any, every: int, options: Any) -> None:
    """Ask the run's correct answers again after later sessions; print the curve."""
    from memlab.postrun.consolidation import run_curve
    from memlab.reporting.figures.memory_time import curve_numbers

    run_curve(run, every, options)
    print("\nconsolidation curve (answers asked again after later sessions; 95% intervals)")
    print(curve_numbers(run).to_string(index=False))


def _check_forgetting(run: Any) -> None:
    """Refuse ``--forgetting`` for a run without a tiered lane at the seed's values."""
    from memlab.grids.qa_spec import QAError
    from memlab.reporting.figures.forgetting_curve import seed_lane

    if seed_lane(run) is None:
        raise QAError(
            f"{run.path}: --forgetting compares tiered lanes with the one at the seed's "
            "forgetting values, and this run has none; add a lane with memory: tiered and "
            "tiered: {} to the grid, or leave out --forgetting"
        )


def _forgetting(run: Any, options: Any) -> None:
    """Ask the forgetting operating curve's questions; keep and print its table."""
    from memlab.reporting.figures.forgetting_curve import (
        forgetting_curve_numbers,
        run_forgetting,
    )

    curve = run_forgetting(run, options)
    print(
        "\nforgetting operating curve (retained answers and memory size per configuration; "
        "95% intervals over owners; kept in qa/forgetting.jsonl)"
    )
    print(forgetting_curve_numbers(curve).to_string(index=False))

"""``memlab ab``: is the candidate prompt better than the baseline? One verdict per metric."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memlab.cli import _args
from memlab.cli.experiment import qa_options
from memlab.cli.tools.matching import matcher_from_args

if TYPE_CHECKING:
    from memlab.grids.qa_spec import QASpec
    from memlab.reporting.compare.prompt_ab import ABResult

# The replays and statistics are imported when the command runs: `memlab --help` stays fast.

__all__ = ["COMMANDS", "register"]

COMMANDS: dict[str, str] = {
    "ab": "replay two prompts and say which is better: one verdict per primary metric",
}
"""The commands this module adds, with their line in `memlab --help`."""

_EXAMPLE = """examples:
  memlab ab default prompts/mine.txt --dataset personas --backend local:smollm2 --mode json_schema
  memlab ab default notebooks/prompts/self_only.txt --backend sim:attentive --qa   # simulated model
  memlab ab concise prompts/mine.txt --backend openai:gpt-4o-mini --qa --tolerance 0.1

The runs go to RUNS_DIR/NAME-base and RUNS_DIR/NAME-candidate (memlab compare, gate and report
read them); a rerun reuses every unchanged replay.
exit codes: 0 a verdict for every primary metric (better, worse or no difference larger than
the stated MDE); 1 a metric is inconclusive (unless --allow-inconclusive) or a replay failed;
2 bad input (an unknown prompt, dataset or backend, an invalid option)."""


def register(subparsers: Any) -> None:
    """Add the ``ab`` command."""
    p = subparsers.add_parser(
        "ab",
        help=COMMANDS["ab"],
        description="Replay a dataset under the BASE prompt and under the CANDIDATE prompt "
        "(two runs, one configuration each), compare them paired on the same owners (the "
        "write side, and memory QA with --qa), and end with one verdict per primary metric: "
        "better, worse, no difference larger than the minimum detectable effect (stated), or "
        "inconclusive with every reason found (the backend ignores prompts, the model echoes "
        "the prompt, too few owners for the tolerance and how many would do, judge verdicts "
        "unreadable, replies failing to parse on both sides, a metric one side lacks).",
        epilog=_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("base", help="baseline prompt: a name (memlab prompts list) or a prompt file")
    p.add_argument("candidate", help="candidate prompt: a name or a prompt file")
    p.add_argument(
        "--dataset",
        default="personas",
        help="bundled dataset name (smoke, personas) or a .jsonl path (default: personas)",
    )
    p.add_argument(
        "--backend",
        required=True,
        help="backend spec both sides replay: local:smollm2, openai:MODEL, local:/path.gguf, "
        "sim:PROFILE (the simulated model: only a profile that declares prompt effects, such "
        "as sim:attentive, reads prompts)",
    )
    p.add_argument(
        "--mode",
        default="free",
        choices=["free", "json_object", "json_schema"],
        help="output mode (default: free)",
    )
    p.add_argument(
        "--max-tokens", type=int, default=1024, help="completion token limit (default 1024)"
    )
    p.add_argument("--max-owners", type=_args.count, help="replay only the first N owners")
    p.add_argument(
        "--max-sessions", type=_args.count, help="replay only the first N sessions per owner"
    )
    _args.add_prompts_option(
        p, "prompt files or directories whose variants BASE and CANDIDATE may name"
    )
    p.add_argument(
        "--tolerance",
        metavar="SIZE",
        type=_args.tolerance,
        help="the smallest difference each primary metric's verdict must be able to see: a "
        "fraction for every rate (0.05 = 5 points), or METRIC=SIZE,...; a metric whose "
        "minimum detectable effect is larger, and whose interval does not rule such a "
        "regression out, is inconclusive, naming the owners that would detect it "
        "(default: 0.05, as memlab gate)",
    )
    p.add_argument(
        "--allow-inconclusive",
        action="store_true",
        help="exit 0 when a metric is inconclusive (its verdict still says so and why)",
    )
    p.add_argument(
        "--runs-dir",
        type=_args.directory,
        default="runs",
        help="parent directory of the two run directories (default: runs)",
    )
    p.add_argument(
        "--name",
        type=_args.run_name,
        help="the runs are NAME-base and NAME-candidate (default: ab-BASE-vs-CANDIDATE); "
        "existing ones are resumed",
    )
    _args.add_matcher_option(p)
    _args.add_cache_options(p, "response cache directory (default: no cache)")
    p.add_argument(
        "--workers",
        type=_args.workers,
        default=4,
        help="concurrent replays in this process (default: 4)",
    )
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    _args.add_stat_options(p)
    _args.add_max_judge_errors(p)
    p.add_argument(
        "--qa",
        action="store_true",
        help="then ask both memories the dataset's questions and grade the answers (memory "
        "QA, compared too; the options below set it up as for memlab qa)",
    )
    qa_options.add_qa_options(
        p,
        max_tokens_flags=("--answer-max-tokens",),
        answer_backend_help="backend that answers with --qa (default: --backend)",
    )
    p.set_defaults(func=_ab)


def _ab(args: argparse.Namespace) -> int:
    _args.single_blas_thread()
    from memlab.grids.qa_spec import QAError, resolve_prompts
    from memlab.postrun.qa_step import IncompleteQAError, JudgeErrorsError
    from memlab.sweeps.driver import IncompleteSweepError

    given = qa_options.given_qa_options(args)
    if given and not args.qa:
        raise QAError(f"{', '.join(given)}: memory QA options; add --qa to ask the questions")
    qa = None
    if args.qa:
        qa = qa_options.qa_spec(args, None, Path(), default_backend=args.backend)
        resolve_prompts(qa)  # a bad prompt file fails before anything is replayed
    try:
        result = _replay(args, qa)
    except (IncompleteSweepError, IncompleteQAError, JudgeErrorsError) as exc:
        # Written and marked incomplete, as by memlab run: the same command resumes them.
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print("\n".join(result.lines()))
    if result.inconclusive and not args.allow_inconclusive:
        return 1
    return 0


def _replay(args: argparse.Namespace, qa: QASpec | None) -> ABResult:
    from memlab.backends.caching.cache import CacheMode
    from memlab.reporting.compare.gate import DEFAULT_TOLERANCE
    from memlab.reporting.compare.prompt_ab import ab
    from memlab.scoring.inference.stats import StatOptions

    return ab(
        args.base,
        args.candidate,
        backend=args.backend,
        dataset=args.dataset,
        settings={"output_mode": args.mode, "max_tokens": args.max_tokens},
        max_owners=args.max_owners,
        max_sessions=args.max_sessions,
        qa=qa,
        tolerance=DEFAULT_TOLERANCE if args.tolerance is None else args.tolerance,
        prompts=args.prompts,
        runs_dir=args.runs_dir,
        name=args.name,
        cache_dir=args.cache_dir,
        cache_mode=CacheMode(args.cache_mode),
        max_workers=args.workers,
        progress=not args.no_progress,
        matcher=matcher_from_args(args),
        options=StatOptions(resamples=args.resamples, alpha=args.alpha),
        max_judge_errors=args.max_judge_errors,
    )

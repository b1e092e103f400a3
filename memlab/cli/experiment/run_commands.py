"""``memlab sweep`` and ``memlab run``: replay a dataset under one or many configurations."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import TYPE_CHECKING, Any

from memlab.cli import _args
from memlab.cli.experiment import qa_options
from memlab.cli.tools.matching import matcher_from_args

if TYPE_CHECKING:
    from memlab.grids.grid import Grid

# The sweep machinery (pandas, the backends) is imported by the commands when they run, so
# `memlab --help` and argument errors stay fast.

__all__ = ["COMMANDS", "register"]

COMMANDS: dict[str, str] = {
    "sweep": "replay a dataset under every configuration of a grid file",
    "run": "replay a dataset under one configuration",
}
"""The commands this module adds, with their line in `memlab --help`."""

logger = logging.getLogger(__name__)

_SWEEP_EXAMPLE = """examples:
  memlab sweep grids/prompt_vs_mode.yaml --cache-dir cache --workers 4
  memlab sweep grids/prompt_vs_mode.yaml --cache-dir cache --executor dask://10.0.0.5:8786

A grid file names the dataset, shared settings and the axes to vary:
  name: prompt-vs-mode
  dataset: smoke            # bundled name or path to a .jsonl file
  prompts: [prompts/mine.txt]   # your prompt files, relative to the grid file
  base: {backend: "local:smollm2", max_tokens: 512}
  axes:
    prompt: [default, mine]
    output_mode: [free, json_schema]
"""

_RUN_EXAMPLE = """examples:
  memlab run smoke --backend local:smollm2 --prompt default --mode json_schema \\
      --threshold 0.7 --max-facts 100 --cache-dir cache
  memlab run smoke --prompt ./my_prompt.txt --backend scripted
  memlab run personas --embedding-duplicates --embedding-threshold 0.85
  memlab run personas --backend sim:careful --qa      # memory QA, answered by sim:careful
  memlab run personas --backend local:smollm2 --qa --judges strict --answer-max-tokens 48
"""


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--runs-dir",
        type=_args.directory,
        default="runs",
        help="parent directory of run directories (default: runs)",
    )
    parser.add_argument(
        "--name",
        type=_args.run_name,
        help="run directory name (default: the grid's name); an existing run is resumed",
    )
    _args.add_cache_options(parser, "response cache directory (default: no cache)")
    parser.add_argument(
        "--workers",
        type=_args.workers,
        default=4,
        help="concurrent replays in this process (default: 4)",
    )
    parser.add_argument(
        "--local-batch",
        type=_args.local_batch,
        metavar="LANES",
        help="decode up to LANES concurrent greedy calls of the local model together, "
        "the shared prompt prefix kept (e.g. --workers 4 --local-batch 4; replaces the "
        "grid's local_batch:; replies and cache keys unchanged)",
    )
    parser.add_argument(
        "--executor",
        type=_args.executor,
        metavar="SPEC",
        help="run the replays on a Dask cluster (needs memlab[dask]): dask://HOST:PORT "
        "connects to a running scheduler, dask-local:N starts N local worker processes "
        "(dask-local:NxT: T threads each); --workers is then unused",
    )
    _args.add_prompts_option(
        parser, "prompt files or directories whose variants the lanes may name"
    )
    parser.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="exit 0 even when some replays had backend errors (read-only cache misses, "
        "refused connections); by default they fail the command and a rerun retries them",
    )
    _args.add_max_judge_errors(parser)
    _args.add_cost_options(parser, "the replays (and a qa: step)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    _args.add_matcher_option(
        parser,
        note="; a judge's calls are cached in --cache-dir",
        after="; memlab rescore changes it later",
    )
    parser.add_argument(
        "--embedding-duplicates",
        action="store_true",
        help="also count near-duplicate facts by embeddings (needs memlab[embeddings])",
    )
    parser.add_argument(
        "--embedding-threshold",
        type=float,
        default=0.8,
        help="cosine similarity from which facts count as duplicates (default 0.8)",
    )


def register(subparsers: Any) -> None:
    """Add the ``sweep`` and ``run`` commands."""
    p = subparsers.add_parser(
        "sweep",
        help=COMMANDS["sweep"],
        description="Replay a dataset under every configuration of a grid (YAML) "
        "and write a run directory.",
        epilog=_SWEEP_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("grid", help="grid YAML file")
    p.add_argument("--backend", help="override every lane's backend spec, e.g. openai:gpt-4o-mini")
    _add_common(p)
    p.set_defaults(func=_sweep)

    r = subparsers.add_parser(
        "run",
        help=COMMANDS["run"],
        description="Replay a dataset under a single configuration (a one-lane sweep).",
        epilog=_RUN_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument("dataset", help="bundled dataset name (smoke, personas) or a .jsonl path")
    r.add_argument(
        "--backend",
        default="scripted",
        help="backend spec: local:smollm2, openai:MODEL, local:/path.gguf, auto (OpenAI when "
        "OPENAI_API_KEY/OPENAI_BASE_URL is set, else local:smollm2) or scripted (default: "
        "canned minimal replies, no model; for trying the pipeline and CI plumbing)",
    )
    r.add_argument(
        "--prompt",
        default="default",
        help="prompt variant name, or a prompt file to load (default: default)",
    )
    r.add_argument(
        "--mode", default="free", choices=["free", "json_object", "json_schema"], help="output mode"
    )
    r.add_argument(
        "--threshold", type=float, default=0.7, help="fact_confidence_threshold (default 0.7)"
    )
    r.add_argument("--max-facts", type=int, default=100, help="max_facts (default 100)")
    r.add_argument("--merge", default="baseline", help="merge strategy (default: baseline)")
    r.add_argument("--debounce", type=int, default=30, help="debounce seconds (default 30)")
    r.add_argument(
        "--max-tokens", type=int, default=1024, help="completion token limit (default 1024)"
    )
    r.add_argument(
        "--replay-mode",
        choices=["debounce", "per_session"],
        default="debounce",
        help="debounce (virtual-clock queue, default) or per_session (flush after each session)",
    )
    r.add_argument("--max-owners", type=_args.count, help="replay only the first N owners")
    r.add_argument(
        "--max-sessions", type=_args.count, help="replay only the first N sessions per owner"
    )
    _add_common(r)
    r.add_argument(
        "--qa",
        action="store_true",
        help="then ask the memory the dataset's questions and grade the answers (memory QA; "
        "the options below set it up as for memlab qa)",
    )
    qa_options.add_qa_options(
        r,
        max_tokens_flags=("--answer-max-tokens",),
        answer_backend_help="backend that answers with --qa (default: --backend)",
    )
    r.set_defaults(func=_run)


def _execute(grid: Grid, args: argparse.Namespace) -> int:
    if args.dry_run:
        return _dry_run(grid, args)
    from memlab.backends.caching.cache import CacheMode
    from memlab.backends.costs.spend import CostLimitError
    from memlab.matching.embeddings import EmbeddingDuplicates, WordLlamaEmbedder
    from memlab.postrun.qa_step import IncompleteQAError, JudgeErrorsError
    from memlab.reporting.qa.qa_section import qa_text
    from memlab.sweeps.driver import IncompleteSweepError, sweep

    embedding_duplicates = None
    if args.embedding_duplicates:
        try:
            embedding_duplicates = EmbeddingDuplicates(
                WordLlamaEmbedder(), threshold=args.embedding_threshold
            )
        except ValueError as exc:  # a threshold out of range
            print(f"error: {exc}", file=sys.stderr)
            return 2
    try:
        run = sweep(
            grid.dataset,
            grid,
            runs_dir=args.runs_dir,
            run_name=args.name,
            prompts=args.prompts,
            cache_dir=args.cache_dir,
            cache_mode=CacheMode(args.cache_mode),
            max_workers=args.workers,
            executor=args.executor,
            progress=not args.no_progress,
            matcher=matcher_from_args(args),
            embedding_duplicates=embedding_duplicates,
            allow_incomplete=args.allow_incomplete,
            max_judge_errors=args.max_judge_errors,
            max_cost=args.max_cost,
            rate_limit=_args.rate_limit_from_args(args),
            local_batch=args.local_batch,
        )
        status = 0
    except CostLimitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except (IncompleteSweepError, IncompleteQAError, JudgeErrorsError) as exc:
        run, status = exc.run, 1
        print(f"error: {exc}", file=sys.stderr)
    from memlab.reporting.display import call_lines

    columns = [
        "label",
        "llm_calls",
        "parse_failure_rate",
        "echo_rate",
        "recall",
        "precision",
        "final_facts",
    ]
    print(run.summary[columns].to_string())
    print("\n".join(call_lines(run)))
    print()
    print(run.lane_status[["label", "reused", "replayed", "why"]].to_string())
    qa = qa_text(run)
    if qa:
        print(f"\n{qa}")
    print(f"\nrun written to {run.path}")
    if status == 0:  # the run's first report then skips parsing its rows
        from memlab.runs.run import keep_table_copies

        keep_table_copies(run.path)
    return status


def _dry_run(grid: Grid, args: argparse.Namespace) -> int:
    """Print what the sweep would call and cost; call no model, write nothing."""
    from memlab.backends.caching.cache import CacheMode
    from memlab.sweeps.dry_run import dry_run

    estimate = dry_run(
        grid.dataset,
        grid,
        runs_dir=args.runs_dir,
        run_name=args.name,
        prompts=args.prompts,
        cache_dir=args.cache_dir,
        cache_mode=CacheMode(args.cache_mode),
    )
    print("\n".join(estimate.lines(args.rpm, args.tpm)))
    return 0


def _sweep(args: argparse.Namespace) -> int:
    from memlab.sweeps.plan import load_grid

    grid = load_grid(args.grid, prompts=args.prompts)
    if args.backend:
        grid = grid.with_settings(backend=args.backend)
    return _execute(grid, args)


def _run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from memlab.core.prompts import looks_like_path, resolve_prompt
    from memlab.grids.grid import Grid
    from memlab.grids.qa_spec import QAError, resolve_prompts

    given = qa_options.given_qa_options(args)
    if given and not args.qa:
        raise QAError(f"{', '.join(given)}: memory QA options; add --qa to ask the questions")
    qa = None
    if args.qa:
        qa = qa_options.qa_spec(args, None, Path(), default_backend=args.backend)
        resolve_prompts(qa)  # a bad prompt file fails before anything is replayed
    prompt = args.prompt
    if looks_like_path(prompt):  # a prompt file: its variant becomes the lane's prompt
        args.prompts = [*args.prompts, prompt]
        prompt = resolve_prompt(prompt).name
    grid = Grid.from_mapping(
        {
            "name": args.name or "run",
            "dataset": args.dataset,
            "replay_mode": args.replay_mode,
            "max_owners": args.max_owners,
            "max_sessions": args.max_sessions,
            "base": {
                "backend": args.backend,
                "prompt": prompt,
                "output_mode": args.mode,
                "fact_confidence_threshold": args.threshold,
                "max_facts": args.max_facts,
                "merge": args.merge,
                "debounce_seconds": args.debounce,
                "max_tokens": args.max_tokens,
            },
            **({"qa": qa.model_dump()} if qa is not None else {}),
        },
        source="command line",
    )
    return _execute(grid, args)

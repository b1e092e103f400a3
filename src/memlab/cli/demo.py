"""``memlab demo``: the main job. Sweep the bundled ``personas`` dataset with the bundled local
model over four configurations and write ``reports/demo/index.html``."""

from __future__ import annotations

import argparse
import logging
import time
from typing import Any

from memlab.backends.cache import CacheMode
from memlab.eval.grid import Grid
from memlab.eval.sweep import sweep
from memlab.reporting.report import build_report

__all__ = ["DEMO_GRID", "register"]

logger = logging.getLogger(__name__)

DEMO_GRID: dict[str, Any] = {
    "name": "demo",
    "dataset": "personas",
    # A subset keeps the first run within minutes on two CPU cores.
    "max_owners": 2,
    "max_sessions": 3,
    "replay_mode": "debounce",
    # A 5-minute debounce coalesces a session's agent runs into one update, as in production.
    "base": {"backend": "local:smollm2", "max_tokens": 192, "debounce_seconds": 300},
    "axes": {"prompt": ["default", "concise"], "output_mode": ["free", "json_schema"]},
}
"""Two prompt variants x free vs schema-constrained output, 2 owners x 3 sessions each."""


def register(subparsers: Any) -> None:
    """Add the ``demo`` command."""
    p = subparsers.add_parser(
        "demo",
        help="sweep the bundled personas dataset with the bundled local model and write a report",
        description="Run the demo sweep (personas subset, SmolLM2-135M in process, 2 prompts x "
        "free/schema output) and write an HTML report. Responses are cached, so a second run "
        "replays from the cache in seconds.",
        epilog="example:\n  memlab demo --out reports/demo --cache-dir runs/demo-cache",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--out", default="reports/demo", help="report directory (default: reports/demo)")
    p.add_argument("--runs-dir", default="runs", help="run directory parent (default: runs)")
    p.add_argument(
        "--cache-dir", default="runs/demo-cache", help="response cache (default: runs/demo-cache)"
    )
    p.add_argument(
        "--max-owners",
        type=int,
        default=DEMO_GRID["max_owners"],
        help="owners to replay (default 2)",
    )
    p.add_argument(
        "--max-sessions",
        type=int,
        default=DEMO_GRID["max_sessions"],
        help="sessions per owner (default 3)",
    )
    # One worker: calls to the in-process model are serialised anyway, and consecutive calls of
    # one lane share the prompt prefix, which llama.cpp then does not evaluate again.
    p.add_argument("--workers", type=int, default=1, help="concurrent replays (default 1)")
    p.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    grid = Grid.from_mapping(
        {**DEMO_GRID, "max_owners": args.max_owners, "max_sessions": args.max_sessions},
        source="demo grid",
    )
    run = sweep(
        grid.dataset,
        grid,
        runs_dir=args.runs_dir,
        cache_dir=args.cache_dir,
        cache_mode=CacheMode.READ_WRITE,
        max_workers=args.workers,
    )
    paths = build_report([run], args.out, title="memlab demo: prompt variant x output mode")
    columns = ["label", "llm_calls", "cache_hits", "parse_failure_rate", "recall", "final_facts"]
    print(run.summary[columns].to_string())
    print(f"\nreport: {paths.html}\nsummary: {paths.markdown}")
    print(f"demo finished in {time.perf_counter() - started:.0f} s")
    return 0

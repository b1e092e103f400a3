"""``memlab demo``: the main job. One command, one report, two parts.

Part 1 replays a subset of the bundled ``personas`` dataset with the bundled local model
(SmolLM2-135M-Instruct) under two prompt variants: free-text output, and schema-constrained
output with length bounds (``schema_bounds``). Part 2 replays the whole dataset
with the simulated model (``sim:chatty``, a test instrument with declared behaviour) over a
``fact_confidence_threshold`` x ``max_facts`` grid, so fact growth, the cap, evictions, the
threshold and the operating curve show up with non-zero numbers. Both go into
``reports/demo/index.html``. Model replies are cached and finished replays are kept, so a second
run only rebuilds the report.
"""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memlab.core.pipeline.llm import Backend
    from memlab.reporting.report import ReportPaths
    from memlab.runs.run import Run

# The sweep and report machinery (pandas, matplotlib, the backends) is imported by run_demo,
# so `memlab --help` and argument errors stay fast.

__all__ = [
    "BOUNDS",
    "COMMANDS",
    "FREE_GRID",
    "SCHEMA_GRID",
    "SIM_GRID",
    "DemoResult",
    "lane_outcomes",
    "outcomes",
    "register",
    "run_demo",
]

COMMANDS: dict[str, str] = {
    "demo": "the main job: real local-model lanes and a simulated merge-policy study, one report",
}
"""The commands this module adds, with their line in `memlab --help`."""

logger = logging.getLogger(__name__)

BOUNDS: dict[str, int] = {
    "summary_chars": 60,
    "fact_chars": 80,
    "max_new_facts": 3,
    "max_removals": 2,
}
"""Grammar bounds for the 135M model: every string and list must end, so a reply closes instead
of looping inside a string. The bounded lanes' ``max_tokens`` is ``auto``: the longest reply
the bounded grammar admits, so no reply of theirs can be cut short."""

_REAL_BASE: dict[str, Any] = {
    "backend": "local:smollm2",
    "max_tokens": 384,
    # A 5-minute debounce coalesces a session's agent runs into one update, as in production.
    "debounce_seconds": 300,
}
FREE_GRID: dict[str, Any] = {
    "name": "demo-free",
    "dataset": "personas",
    "max_owners": 2,
    "max_sessions": 3,
    "base": {**_REAL_BASE, "output_mode": "free"},
    "axes": {"prompt": ["default", "concise"]},
}
"""Part 1a: the real model with free-text output (the prompt alone asks for JSON)."""
SCHEMA_GRID: dict[str, Any] = {
    **FREE_GRID,
    "name": "demo-bounded",
    "base": {
        **_REAL_BASE,
        "output_mode": "json_schema",
        "schema_bounds": BOUNDS,
        "max_tokens": "auto",
    },
}
"""Part 1b: the real model constrained by the contract's grammar with bounds. (Unbounded, it
tends to loop inside a string until ``max_tokens``; left out to keep the first run short.)"""
SIM_GRID: dict[str, Any] = {
    "name": "demo-sim",
    "dataset": "personas",
    "base": {"backend": "sim:chatty"},
    "axes": {"fact_confidence_threshold": [0.5, 0.7, 0.9], "max_facts": [10, 20, 40]},
}
"""Part 2: the merge-policy study on the whole dataset with the simulated model."""


@dataclass(frozen=True)
class DemoResult:
    """The runs of the demo (real ones first) and the report written."""

    real: list[Run]
    simulated: Run
    paths: ReportPaths


def _count(n: int | None, noun: str) -> str:
    return f"all {noun}s" if n is None else f"{n} {noun}{'' if n == 1 else 's'}"


def _intro(real: list[Run], simulated: Run) -> str:
    """The report's introduction, one short line each (the report lists them)."""
    first = real[0].grid
    real_lanes = sum(len(run.lanes) for run in real)
    owners = simulated.summary["owners"].max()
    sessions = simulated.summary["sessions"].max()
    return "\n".join(
        [
            f"Part 1 (runs {', '.join(r.name for r in real)}; real model): the bundled "
            f"SmolLM2-135M-Instruct replays {_count(first.max_owners, 'owner')} x "
            f"{_count(first.max_sessions, 'session')} of personas in {real_lanes} "
            "configurations: the default and concise prompts, each with free-text output and "
            "with bounded schema-constrained output (schema_bounds).",
            "It shows which replies a 135M model gets through the parse ladder and what the "
            "facts it stores look like (duplicates, precision).",
            "In this run: "
            + "; ".join(phrase for run in real for phrase in lane_outcomes(run))
            + ".",
            f"Part 2 (run {simulated.name}; simulated): the simulated model sim:chatty replays "
            f"all {owners} owners ({sessions} sessions) under fact_confidence_threshold x "
            "max_facts: fact growth up to the cap, evictions, what the threshold filters and "
            "the recall/precision operating curve. Every lane of part 2 is simulated.",
        ]
    )


def lane_outcomes(run: Run) -> list[str]:
    """What became of a run's replies, counted from its calls: one phrase per lane."""
    calls = run.calls
    if calls.empty:
        return [f"{run.name}: no replies"]
    phrases = []
    for lane_id, lane_calls in calls[calls["reply"].notna()].groupby("lane_id", sort=False):
        limit = run.lanes[str(lane_id)].max_tokens
        phrases.append(
            f"{run.label(str(lane_id))} ({run.name}, max_tokens {limit}): "
            f"{int(lane_calls['parse_ok'].sum())} of {len(lane_calls)} replies parsed, "
            f"{int((lane_calls['parse_category'] == 'truncated').sum())} truncated"
        )
    return phrases


def outcomes(run: Run) -> str:
    """What became of a run's replies, counted from its calls (one phrase per lane)."""
    return "; ".join(lane_outcomes(run))


def run_demo(
    out: str | Path = "reports/demo",
    *,
    runs_dir: str | Path = "runs",
    cache_dir: str | Path = "runs/demo-cache",
    max_owners: int | None = None,
    max_sessions: int | None = None,
    workers: int = 1,
    backend_factory: Callable[[str], Backend] | None = None,
    progress: bool = True,
) -> DemoResult:
    """Run both parts and write the report.

    Args:
        backend_factory: Builds the real-model backends (default: the registry). Simulated
            lanes always come from the registry with the dataset they replay.
    """
    from memlab.backends.caching.cache import CacheMode
    from memlab.backends.registry import backend_options, is_simulated, resolve_backend
    from memlab.datasets.registry import resolve_dataset
    from memlab.grids.grid import Grid
    from memlab.reporting.report import build_report
    from memlab.sweeps.driver import sweep

    limits = {
        key: value
        for key, value in (("max_owners", max_owners), ("max_sessions", max_sessions))
        if value is not None
    }
    dataset = resolve_dataset("personas")

    def factory(spec: str) -> Backend:
        if backend_factory is None or is_simulated(spec):
            return resolve_backend(spec, **backend_options(spec, dataset))
        return backend_factory(spec)

    real = []
    for grid_data in (FREE_GRID, SCHEMA_GRID):
        grid = Grid.from_mapping({**grid_data, **limits}, source="demo grid")
        real.append(
            sweep(
                dataset,
                grid,
                runs_dir=runs_dir,
                cache_dir=cache_dir,
                cache_mode=CacheMode.READ_WRITE,
                max_workers=workers,
                backend_factory=factory,
                progress=progress,
            )
        )
    simulated = sweep(
        dataset,
        Grid.from_mapping(SIM_GRID, source="demo grid"),
        runs_dir=runs_dir,
        max_workers=workers,
        backend_factory=factory,
        progress=progress,
    )
    paths = build_report(
        [*real, simulated],
        out,
        title="memlab demo: a real small model, and a simulated merge-policy study",
        intro=_intro(real, simulated),
        # Two studies on purpose: the real model on a few owners, the simulator on all of
        # them. They are never ranked together; the report's banner says what differs.
        allow_mixed=True,
    )
    return DemoResult(real=real, simulated=simulated, paths=paths)


def register(subparsers: Any) -> None:
    """Add the ``demo`` command."""
    p = subparsers.add_parser(
        "demo",
        help=COMMANDS["demo"],
        description="Part 1: SmolLM2-135M (in process) on a personas subset, 2 prompts x "
        "free / bounded-schema output. Part 2: the simulated model (sim:chatty) on "
        "all of personas, threshold x max_facts. Writes one HTML report. Responses are cached "
        "and finished replays kept, so a second run takes seconds.",
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
        default=FREE_GRID["max_owners"],
        help=f"owners the real model replays (default {FREE_GRID['max_owners']})",
    )
    p.add_argument(
        "--max-sessions",
        type=int,
        default=FREE_GRID["max_sessions"],
        help=f"sessions per owner for the real model (default {FREE_GRID['max_sessions']})",
    )
    # One worker: calls to the in-process model are serialised anyway, and consecutive calls of
    # one lane share the prompt prefix, which llama.cpp then does not evaluate again.
    p.add_argument("--workers", type=int, default=1, help="concurrent replays (default 1)")
    p.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    import pandas as pd

    from memlab.reporting.display import call_lines
    from memlab.reporting.echoes import echo_lines

    started = time.perf_counter()
    if not getattr(args, "verbose", 0):
        # Failed updates are expected here (a 135M model, simulated reply failures) and counted
        # in the tables below; one warning per update would bury them. -v shows them.
        logging.getLogger("memlab.core").setLevel(logging.ERROR)
    result = run_demo(
        args.out,
        runs_dir=args.runs_dir,
        cache_dir=args.cache_dir,
        max_owners=args.max_owners,
        max_sessions=args.max_sessions,
        workers=args.workers,
    )
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print("Part 1, real model: parse outcomes per configuration (replies)")
        for run in result.real:
            table = run.failures.rename(index=run.label)
            print(table.to_string() if not table.empty else f"{run.name}: no replies")
            print(outcomes(run))
            columns = ["label", "model_calls", "cache_hits", "parse_failure_rate", "final_facts"]
            print(run.summary[columns].to_string(index=False))
            print("\n".join([*call_lines(run)[:1], *echo_lines(run)]), "\n")
        print("Part 2, simulated model (sim:chatty): merge policy on all of personas")
        columns = ["label", "final_facts", "added", "evicted", "skipped_below_threshold"]
        columns += ["recall", "precision"]
        print(result.simulated.summary[columns].to_string(index=False))
    print(f"\nreport: {result.paths.html}\nsummary: {result.paths.markdown}")
    print(f"demo finished in {time.perf_counter() - started:.0f} s")
    return 0

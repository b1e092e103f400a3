"""How a cached replay, `memlab report` and `memlab compare` grow with the number of owners.

For each size N (owners, 20 sessions each, ``per_session`` mode, 4 lanes: two confidence
thresholds x two ``max_facts``), the script writes the dataset of ``sweep_bench.py``, records
the sweep once through the response cache (the scripted backend, not timed), then times:

1. the sweep replayed from the cache (``READ_ONLY``, a backend that raises if called), in
   this process: wall and CPU time;
2. the table copies ``memlab sweep`` keeps once the run is written
   (:func:`memlab.runs.run.keep_table_copies`), in this process: the sweep command's last
   step, beside the replay's;
3. ``memlab report RUN -o OUT`` as a new process (the first report after ``memlab sweep``:
   it reads the copies);
4. ``memlab compare RUN`` (every lane against the first) as a new process;
5. ``memlab report`` of the run without its copies (as after the library's ``sweep()``,
   which keeps none; timed first, its copies then deleted), for information.

Each row prints wall and CPU time (the child's CPU for the two commands) and the time per
update (per owner x lane for the commands); the ratio of the largest size's per-update time to
the smallest's shows whether a step grows faster than the owners do (about 1 when linear).
Goals at 1,000 owners (80,000 updates), in CPU time (the child's for the two commands), so
that other work on a shared machine moves them less than wall time: the replay from the cache
<= 2 ms per update, ``memlab report`` <= 10 s and ``memlab compare`` <= 5 s, each printed PASS
or MISS (exit status 1 on a MISS).

Usage::

    .venv/bin/python benchmarks/scale_bench.py                      # 1,000 owners (minutes)
    .venv/bin/python benchmarks/scale_bench.py --owners 50 200      # the ratio on a smaller run
    .venv/bin/python benchmarks/scale_bench.py --owners 160 --workdir /tmp/scale --keep
    .venv/bin/python benchmarks/scale_bench.py --owners 160 --workdir /tmp/scale --reuse
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sweep_bench import (
    ScriptedBackend,
    _ForbiddenBackend,
    _number_reply,
    _timed_sweep,
    write_dataset,
)

from memlab.backends.caching.cache import CacheMode
from memlab.grids.grid import Grid
from memlab.runs.run import keep_table_copies

SESSIONS = 20
LANES = 4
GOAL_OWNERS = 1000
GOALS_CPU_S = {
    "sweep from cache": 0.002 * GOAL_OWNERS * SESSIONS * LANES,
    "memlab report": 10.0,
    "memlab compare": 5.0,
}
"""Each step's CPU seconds at GOAL_OWNERS owners (the replay's: 2 ms per update)."""
GRID = {
    "name": "bench-scale",
    "replay_mode": "per_session",
    "axes": {"fact_confidence_threshold": [0.7, 0.9], "max_facts": [10, 100]},
}


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _command(args: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of ``memlab ARGS`` run as a new process."""
    cpu, started = _child_cpu(), time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "memlab", *args],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - started, _child_cpu() - cpu


def _replay(base: Path, owners: int, workers: int) -> tuple[float, float]:
    """Record the sweep through the response cache, then time its replay from the cache."""
    dataset = write_dataset(base / "data.jsonl", owners=owners, sessions=SESSIONS, gold=True)
    grid = Grid.from_mapping(GRID)
    responses = (base / "responses", CacheMode.READ_WRITE)
    recorder = ScriptedBackend(function=_number_reply)
    _timed_sweep(dataset, grid, base / "runs", "record", recorder, workers, responses)
    cpu = time.process_time()
    wall, _rows, _hits = _timed_sweep(
        dataset,
        grid,
        base / "runs",
        "replay",
        _ForbiddenBackend(),
        workers,
        (base / "responses", CacheMode.READ_ONLY),
    )
    (base / "replay.done").write_text("", encoding="utf-8")
    return wall, time.process_time() - cpu


def measure(
    workdir: Path, owners: int, workers: int, *, reuse: bool = False
) -> dict[str, tuple[float, float]]:
    """Wall and CPU seconds of the cached replay, the report and the comparison.

    With ``reuse``, a replayed run left in ``workdir`` by an earlier ``--keep`` is scored
    again without recording or replaying it (the replay's row is then NaN)."""
    base = workdir / f"n{owners}"
    if reuse and (base / "replay.done").exists():
        replay = (math.nan, math.nan)
    else:
        replay = _replay(base, owners, workers)
    run = base / "runs" / "replay"
    shutil.rmtree(run / "cache", ignore_errors=True)  # the copies an earlier report kept
    no_copies = _command(["report", str(run), "-o", str(base / "report")])
    shutil.rmtree(run / "cache", ignore_errors=True)
    cpu, started = time.process_time(), time.perf_counter()
    keep_table_copies(run)  # as `memlab sweep` does once the run is written
    copies = (time.perf_counter() - started, time.process_time() - cpu)
    return {
        "sweep from cache": replay,
        "sweep's copies": copies,
        "memlab report": _command(["report", str(run), "-o", str(base / "report")]),
        "memlab compare": _command(["compare", str(run)]),
        "report, no copies": no_copies,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--owners", type=int, nargs="+", default=[1000])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the runs (under --workdir)")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="score the runs an earlier --keep left under --workdir, without replaying them",
    )
    args = parser.parse_args(argv)
    sizes = sorted(args.owners)
    before = os.getloadavg()
    if (args.keep or args.reuse) and args.workdir is not None:
        results = {n: measure(args.workdir, n, args.workers, reuse=args.reuse) for n in sizes}
    else:
        with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
            results = {n: measure(Path(tmp), n, args.workers) for n in sizes}
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average {load} (before the run: {' '.join(f'{x:.2f}' for x in before)})")
    print(f"{SESSIONS} sessions per owner, 4 lanes, per_session mode, {args.workers} workers")
    print(
        f"{'owners':>7} {'step':<17} {'wall s':>8} {'CPU s':>8} {'CPU ms/update':>14} {'ratio':>6}"
    )
    first = sizes[0]
    for n in sizes:
        for step, (wall, cpu) in results[n].items():
            per = cpu / (n * SESSIONS * LANES)
            base_cpu = results[first][step][1] / (first * SESSIONS * LANES)
            print(
                f"{n:>7} {step:<17} {wall:>8.2f} {cpu:>8.2f} {per * 1000:>14.3f} "
                f"{per / base_cpu:>6.2f}"
            )
        total = sum(  # the user's path: replay, the sweep's copies, report, compare
            wall
            for step, (wall, _) in results[n].items()
            if step != "report, no copies" and not math.isnan(wall)
        )
        print(f"{n:>7} {'end to end':<17} {total:>8.2f}")
    if sizes[-1] < GOAL_OWNERS:
        return 0
    missed = False
    for step, goal in GOALS_CPU_S.items():
        cpu = results[sizes[-1]][step][1]
        if math.isnan(cpu):  # --reuse: the replay was not timed
            continue
        verdict = "PASS" if cpu <= goal else "MISS"
        missed = missed or cpu > goal
        print(f"goal: {step} <= {goal:g} s CPU at {sizes[-1]} owners: {cpu:.2f} s, {verdict}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())

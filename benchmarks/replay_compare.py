"""CPU time of the cached 1,000-update replay on this tree and another, taking turns.

The replay of ``sweep_bench.py --only cache`` (50 owners x 20 sessions, ``per_session``,
replayed from the response cache in ``READ_ONLY`` mode around a backend that raises if called),
measured the way that script measures it: in a process that recorded the cache (or found it)
and replayed it once to warm up, with no matcher verdict memoised and the recording's verdicts
read from the cache directory. Each round runs one process per tree, the trees taking turns so
that a change in the machine's load touches both alike; the table gives each process's CPU
time and wall time of the timed replay, and the ratio of the median CPU times.

Each tree records its own cache directory under ``--workdir``: the saved verdicts carry a
digest of the matching code, so a tree whose matching code differs would decide every
verdict again on the other's cache. Usage::

    git archive main src | tar -x -C /tmp/old
    python benchmarks/replay_compare.py --compare /tmp/old/src            # 3 rounds
    python benchmarks/replay_compare.py --compare /tmp/old/src --rounds 5
    python benchmarks/replay_compare.py --compare /tmp/old/src --repeats 3   # best of 3 each

With ``--repeats N`` each process times N replays and keeps the one with the least CPU time:
on a loaded machine a single replay's CPU time varies by a third from one run to the next.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["main", "replay_once"]

GOAL_CPU_S = 1.5


def replay_once(base: Path, workers: int = 4, repeats: int = 1) -> tuple[float, float]:
    """Record ``base`` (once), warm up with one replay, then time ``repeats`` replays, each
    with no verdict memoised: (CPU s, wall s) of the one with the least CPU time."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import sweep_bench as bench  # the benchmark's dataset, backends and sweep call

    from memlab.backends.caching.cache import CacheMode
    from memlab.backends.scripted import ScriptedBackend
    from memlab.grids.grid import Grid

    grid = Grid.from_mapping({"name": "bench-cache", "replay_mode": "per_session"})
    dataset, responses = base / "data.jsonl", base / "responses"
    if not responses.exists():
        bench.write_dataset(dataset, owners=50, sessions=20, gold=True)
        recorder = ScriptedBackend(function=bench._number_reply)
        cache = (responses, CacheMode.READ_WRITE)
        bench._timed_sweep(dataset, grid, base / "record", "record", recorder, workers, cache)
    runs = base / "runs"
    shutil.rmtree(runs, ignore_errors=True)
    read_only = (responses, CacheMode.READ_ONLY)
    forbidden = bench._ForbiddenBackend()
    bench._timed_sweep(dataset, grid, runs, "warm-up", forbidden, workers, read_only)
    timed = []
    for index in range(repeats):
        bench.clear_shared_verdicts()
        cpu, wall = time.process_time(), time.perf_counter()
        name = "timed" if index == 0 else f"timed-{index}"  # a new run each time, not resumed
        bench._timed_sweep(dataset, grid, runs, name, forbidden, workers, read_only)
        timed.append((time.process_time() - cpu, time.perf_counter() - wall))
    return min(timed)


def _run_tree(base: Path, src: Path | None, repeats: int) -> tuple[float, float]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src.resolve())
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import replay_compare as r; "
        "print(*r.replay_once(__import__('pathlib').Path(sys.argv[2]), "
        "repeats=int(sys.argv[3])))"
    )
    here = str(Path(__file__).resolve().parent)
    done = subprocess.run(
        [sys.executable, "-c", code, here, str(base), str(repeats)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    cpu, wall = done.stdout.split()[-2:]
    return float(cpu), float(wall)


def main(argv: list[str] | None = None) -> int:
    """Run the rounds and print the table; exit 1 when this tree misses the CPU goal."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--compare", type=Path, help="src directory of another memlab tree")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="timed replays per process; the one with the least CPU time counts (steadier "
        "on a loaded machine)",
    )
    args = parser.parse_args(argv)
    trees: dict[str, Path | None] = {"this tree": None}
    if args.compare is not None:
        trees = {f"compared ({args.compare})": args.compare, **trees}
    results: dict[str, list[tuple[float, float]]] = {label: [] for label in trees}
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        for _ in range(args.rounds):
            for index, (label, src) in enumerate(trees.items()):
                results[label].append(_run_tree(Path(tmp) / f"tree{index}", src, args.repeats))
                loads.append(os.getloadavg()[0])
    print(f"load average (1 min) {min(loads):.1f}-{max(loads):.1f}, {os.cpu_count()} CPUs")
    for label, runs in results.items():
        cpus = ", ".join(f"{cpu:.2f}" for cpu, _ in runs)
        walls = ", ".join(f"{wall:.2f}" for _, wall in runs)
        median = statistics.median(cpu for cpu, _ in runs)
        print(f"{label}: CPU {cpus} s (median {median:.2f}); wall {walls} s")
    mine = statistics.median(cpu for cpu, _ in results["this tree"])
    if args.compare is not None:
        other = statistics.median(cpu for cpu, _ in next(iter(results.values())))
        print(f"median CPU, compared tree / this tree: {other / mine:.2f}x")
    verdict = "PASS" if mine <= GOAL_CPU_S else "MISS"
    print(f"this tree: median CPU {mine:.2f} s, goal <= {GOAL_CPU_S} s: {verdict}")
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())

"""Start time of memlab commands, measured as whole processes.

Each command runs ``--repeats`` times as a new process (``python -m memlab ...``), the commands
taking turns so that a change in the machine's load touches all of them alike; the table gives
the min, median and max wall time and the median's ratio to a bare interpreter start
(``python -c pass``, measured in the same turns). Goals, on the median: ``--help`` <= 0.5 s, the
other commands <= 1 s.

``--compare SRC`` also runs every command with ``PYTHONPATH=SRC`` (the ``src`` directory of an
older checkout with its datasets, e.g. ``git archive main src datasets | tar -x -C /tmp/old``),
in the same turns, and prints the ratio of the two medians. Usage::

    python benchmarks/start_bench.py                        # about half a minute
    python benchmarks/start_bench.py --compare /tmp/old/src
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from memlab.core.jsondoc.contract import MINIMAL_VALID_UPDATE

__all__ = ["COMMANDS", "Timing", "main", "measure"]

COMMANDS: dict[str, tuple[list[str], float | None]] = {
    "python -c pass (reference)": (["-c", "pass"], None),
    "memlab --help": (["-m", "memlab", "--help"], 0.5),
    "memlab validate reply.txt": (["-m", "memlab", "validate", "reply.txt"], 1.0),
    "memlab datasets stats smoke": (["-m", "memlab", "datasets", "stats", "smoke"], 1.0),
}
"""Label -> (interpreter arguments, goal in seconds on the median; None: no goal)."""


@dataclass
class Timing:
    """The wall times of one command under one source tree."""

    label: str
    goal: float | None
    seconds: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    def result(self) -> str:
        if self.goal is None:
            return "info"
        return "PASS" if self.median <= self.goal else "MISS"


def _run_once(args: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, check=False
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{args} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return elapsed


def measure(repeats: int, trees: dict[str, dict[str, str]], cwd: Path) -> dict[str, Timing]:
    """Time every command under every tree, ``repeats`` times, the runs taking turns."""
    timings = {
        f"{label}{tree}": Timing(f"{label}{tree}", goal if not tree else None)
        for label, (_, goal) in COMMANDS.items()
        for tree in trees
    }
    for turn in range(repeats + 1):  # the first turn warms the file cache and is not counted
        for label, (args, _) in COMMANDS.items():
            for tree, env in trees.items():
                elapsed = _run_once(args, cwd, env)
                if turn > 0:
                    timings[f"{label}{tree}"].seconds.append(elapsed)
    return timings


def render(timings: dict[str, Timing], trees: list[str]) -> str:
    reference = {tree: timings[f"{next(iter(COMMANDS))}{tree}"].median for tree in trees}
    header = ("command", "min", "median", "max", "x python", "goal", "result")
    rows = []
    for label, (_, goal) in COMMANDS.items():
        for tree in trees:
            t = timings[f"{label}{tree}"]
            rows.append(
                (
                    t.label,
                    f"{min(t.seconds):.3f} s",
                    f"{t.median:.3f} s",
                    f"{max(t.seconds):.3f} s",
                    f"{t.median / reference[tree]:.1f}x",
                    f"<= {goal:g} s" if goal is not None and not tree else "-",
                    t.result(),
                )
            )
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    head = "  ".join(c.ljust(w) for c, w in zip(header, widths, strict=True))
    out = [head, "  ".join("-" * w for w in widths), *lines]
    if len(trees) > 1:
        out.append("")
        for label in list(COMMANDS)[1:]:
            new, old = timings[f"{label}{trees[0]}"].median, timings[f"{label}{trees[1]}"].median
            out.append(f"{label}: {old / new:.1f}x faster than the compared tree")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Measure and print the table; exit 1 when a goal is missed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per command")
    parser.add_argument("--compare", type=Path, help="src directory of another memlab tree")
    args = parser.parse_args(argv)
    base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    trees = {"": base}
    if args.compare is not None:
        trees[f" [{args.compare}]"] = {**base, "PYTHONPATH": str(args.compare.resolve())}
    load_before = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="memlab-start-") as tmp:
        cwd = Path(tmp)
        (cwd / "reply.txt").write_text(json.dumps(MINIMAL_VALID_UPDATE), encoding="utf-8")
        # The bundled datasets are found beside the checkout that runs, whatever the cwd.
        timings = measure(args.repeats, trees, cwd)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"python {platform.python_version()}, {os.cpu_count()} CPUs, {args.repeats} runs per "
        f"command, load average {load} (before the run: {load_before})\n"
    )
    print(render(timings, list(trees)))
    return 0 if all(t.result() != "MISS" for t in timings.values()) else 1


if __name__ == "__main__":
    sys.exit(main())

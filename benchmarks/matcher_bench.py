"""How long fact matching takes: calibration, and scoring a replay's session snapshots.

Run from the repository root::

    .venv/bin/python benchmarks/matcher_bench.py            # about half a minute on 2 cores

Side by side in one run, for the ``lexical``, ``default-lexical`` and ``default`` matchers:

- **calibration**: every pair of the bundled calibration sets (both styles), with a new
  matcher and the fact reader's caches cleared (cold), then the same matcher again
  (memoised verdicts);
- **replay scoring**: :func:`memlab.scoring.metrics.session_rows` over every owner of
  ``personas`` with a perfect memory (each session's snapshot holds the gold facts active
  after it), which scores recall, precision, retracted-held and the memory operations; the
  number of (stored, gold) questions the metrics ask is printed beside it.

Each timing is the best of ``--repeats`` and is printed with the process CPU time and its ratio
to a fixed reference task (``json.dumps`` of the pairs, ten times), so runs on a busy machine
stay comparable. Loading the embedding model is timed apart. Loads the pairs files by path,
so the same script measures older versions of memlab too (``PYTHONPATH=<other>/src``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memlab.datasets.loader import load_dataset
from memlab.matching.calibration import calibrate, load_pairs
from memlab.matching.matchers import resolve_matcher
from memlab.scoring.metrics import session_rows

ROOT = Path(__file__).resolve().parents[1]
PAIR_FILES = sorted((ROOT / "datasets" / "matching").glob("*.jsonl"))
MATCHERS = ("lexical", "default-lexical", "default")


def _clear_caches() -> None:
    """Forget every text the fact reader has read (in whichever modules this version has)."""
    import importlib

    for module_name in ("memlab.matching.fact_reading", "memlab.matching.fact_lexicon"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        for value in vars(module).values():
            if callable(getattr(value, "cache_clear", None)):
                value.cache_clear()


def _timed(task: Callable[[], Any], repeats: int) -> tuple[float, float]:
    best_wall = best_cpu = float("inf")
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        task()
        best_wall = min(best_wall, time.perf_counter() - wall)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return best_wall, best_cpu


def _perfect_snapshots(owner: Any) -> list[dict[str, Any]]:
    active: dict[str, str] = {}
    snapshots = []
    for session in owner.sessions:
        for gid in session.labels.retracts:
            active.pop(gid, None)
        for fact in session.labels.facts:
            active[fact.id] = fact.content
        snapshots.append({"facts": [{"content": text} for text in active.values()]})
    return snapshots


class _Counting:
    """Counts the (stored, gold) questions the metrics ask the matcher."""

    def __init__(self, matcher: Any) -> None:
        self.matcher, self.asked = matcher, 0
        self.name = getattr(matcher, "name", "?")
        warm = getattr(matcher, "warm", None)
        if warm is not None:
            self.warm = warm

    def covers(self, stored: str, gold: str) -> bool:
        self.asked += 1
        return bool(self.matcher.covers(stored, gold))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    repeats = parser.parse_args().repeats
    pairs = [p for path in PAIR_FILES for p in load_pairs(path)]
    owners = load_dataset(ROOT / "datasets" / "personas.jsonl")
    texts = [(p.gold, p.stored) for p in pairs]
    reference, _ = _timed(lambda: [json.dumps(texts) for _ in range(10)], repeats)
    load_avg = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average {load_avg:.2f}; reference task {reference * 1e3:.1f} ms")
    print(
        f"{len(pairs)} calibration pairs ({', '.join(p.name for p in PAIR_FILES)}); "
        f"personas: {len(owners)} owners, {sum(len(o.sessions) for o in owners)} sessions\n"
    )
    start = time.perf_counter()
    resolve_matcher("default")  # loads the embedding model once (shared by later matchers)
    print(f"embedding model load: {time.perf_counter() - start:.2f} s\n")
    print(f"{'matcher':<16} {'task':<28} {'wall s':>8} {'cpu s':>8} {'x ref':>7} {'per item':>12}")
    for name in MATCHERS:
        _measure(name, pairs, owners, reference, repeats)
    return 0


def _measure(
    name: str, pairs: list[Any], owners: list[Any], reference: float, repeats: int
) -> None:
    """Print one matcher's rows: cold and memoised calibration, cold replay scoring."""

    def cold() -> None:
        _clear_caches()
        calibrate(resolve_matcher(name), pairs)

    warm_matcher = resolve_matcher(name)
    calibrate(warm_matcher, pairs)
    asked: list[int] = []

    def replay() -> None:
        _clear_caches()
        counting = _Counting(resolve_matcher(name))
        for owner in owners:
            snapshots = _perfect_snapshots(owner)
            session_rows(owner, snapshots, [], [0] * len(snapshots), matcher=counting)
        asked.append(counting.asked)

    sessions = sum(len(o.sessions) for o in owners)
    rows = [
        ("calibration, cold", _timed(cold, repeats), len(pairs), "pair"),
        (
            "calibration, memoised",
            _timed(lambda: calibrate(warm_matcher, pairs), repeats),
            len(pairs),
            "pair",
        ),
        ("replay scoring, cold", _timed(replay, repeats), sessions, "snapshot"),
    ]
    for task, (wall, cpu), items, unit in rows:
        print(
            f"{name:<16} {task:<28} {wall:>8.3f} {cpu:>8.3f} {wall / reference:>7.1f} "
            f"{wall / items * 1e3:>8.2f} ms/{unit}"
        )
    print(f"{'':<16} (replay scoring asked {asked[-1]} stored/gold questions)")


if __name__ == "__main__":
    raise SystemExit(main())

"""How often memlab's printed 95% intervals cover the true value, by number of owners.

Data come from generators whose true value is known by construction (never from memlab's
estimators); the intervals are memlab's own (:func:`memlab.scoring.inference.stats.bootstrap` on the
estimators of the metric specs), with whichever method memlab picks
(:func:`memlab.scoring.inference.coverage.interval_method`). Cases:

- **rate** (micro, like ``recall``): owner ``i`` has ``m_i = 5 + Poisson(10)`` trials and its
  own rate ``p_i ~ Beta`` with mean 0.5 or 0.8 and concentration 10 (owners differ); true
  value: the mean (``E[x_i] / E[m_i]``, ``p_i`` independent of ``m_i``).
- **rare rate** (like ``parse_failure_rate``): the same with means 3% and 1%.
- **macro rate** (like ``precision_macro``): the mean of owners' own ratios, mean 0.8.
- **RMST** (``stale_rmst``): owner ``i`` has ``1 + Poisson(2)`` stale facts, each removed at
  every session end with the owner's hazard ``h_i ~ Beta(2, 3)`` and censored after
  ``c_i ~ U{1..5}`` session ends; true value ``sum_{t<3} E[(1 - h)^(t + 1)]`` (Beta moments).
- **QA category** (``accuracy_table`` per category): ``q`` questions of one category spread at
  random over 14 owners (most get 0-2), each owner right with its own ``p_i ~ Beta`` of mean
  0.5, 0.8 or 0.95; the interval is over the owners that have a question (clustered by
  owner, as QA is scored).

Each cell prints the coverage over the trials where an interval is printed, and ``none`` where
memlab prints no interval ("too few owners"). Goal: coverage >= 0.93 in every cell with an
interval; the binomial noise of a cell is about 0.007 at 1,000 trials, so a cell whose interval
truly covers 95% misses the goal by chance well under once per run.

Usage::

    python benchmarks/interval_coverage.py               # about 2 minutes on one core
    python benchmarks/interval_coverage.py --trials 200  # quicker, noisier

The exit status is 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from memlab.scoring.count_specs import STALE_HORIZON
from memlab.scoring.inference.estimators import estimator
from memlab.scoring.inference.stats import Interval, StatOptions, bootstrap, ratio_estimator
from memlab.scoring.inference.survival import Episode, episode_counts
from memlab.scoring.metric_specs import metric_spec

OWNERS = (2, 3, 4, 6, 14, 30)
QUESTIONS = (2, 3, 5, 10, 20, 40)
GOAL = 0.93
CONCENTRATION = 10.0

Draw = Callable[[np.random.Generator, int], tuple[Interval, float]]


def _owner_rates(rng: np.random.Generator, owners: int, mean: float) -> np.ndarray:
    return rng.beta(mean * CONCENTRATION, (1 - mean) * CONCENTRATION, size=owners)


def _interval(spec: str, counts: dict[str, np.ndarray], seed: int) -> Interval:
    frame = pd.DataFrame(counts)
    return bootstrap(estimator(metric_spec(spec), frame), StatOptions(2000, seed=seed))


def rate(spec: str, num: str, den: str, mean: float) -> Draw:
    """A ratio metric ``spec`` over binomial counts with owner-level spread."""

    def draw(rng: np.random.Generator, owners: int) -> tuple[Interval, float]:
        trials = 5 + rng.poisson(10, size=owners)
        events = rng.binomial(trials, _owner_rates(rng, owners, mean))
        seed = int(rng.integers(2**31))
        return _interval(spec, {num: events, den: trials}, seed), mean

    return draw


def _rmst_truth(a: float, b: float) -> float:
    """``sum_{t < H} E[(1 - h)^(t + 1)]`` for ``h ~ Beta(a, b)``."""
    total, moment = 0.0, 1.0
    for k in range(STALE_HORIZON):
        moment *= (b + k) / (a + b + k)
        total += moment
    return total


def rmst(rng: np.random.Generator, owners: int) -> tuple[Interval, float]:
    a, b = 2.0, 3.0
    columns: dict[str, list[int]] = {}
    for _ in range(owners):
        hazard, seen = rng.beta(a, b), int(rng.integers(1, 6))
        episodes = []
        for _ in range(1 + rng.poisson(2)):
            removed_at = int(rng.geometric(hazard)) - 1  # session ends it survives
            censored = removed_at >= seen
            episodes.append(Episode(seen if censored else removed_at, censored))
        removed, at_risk = episode_counts(episodes, STALE_HORIZON)
        for t in range(STALE_HORIZON):
            columns.setdefault(f"stale_removed_{t}", []).append(removed[t])
            columns.setdefault(f"stale_at_risk_{t}", []).append(at_risk[t])
    arrays = {k: np.asarray(v, dtype=float) for k, v in columns.items()}
    return _interval("stale_rmst", arrays, int(rng.integers(2**31))), _rmst_truth(a, b)


def qa_category(mean: float, owners: int = 14) -> Draw:
    """``questions`` questions of one category over ``owners`` owners (the cell's n)."""

    def draw(rng: np.random.Generator, questions: int) -> tuple[Interval, float]:
        asked = np.bincount(rng.integers(0, owners, size=questions), minlength=owners)
        right = rng.binomial(asked, _owner_rates(rng, owners, mean))
        seed = int(rng.integers(2**31))
        return bootstrap(ratio_estimator(right, asked), StatOptions(2000, seed=seed)), mean

    return draw


@dataclass(frozen=True)
class Cell:
    covered: int
    shown: int
    methods: dict[str, int]

    @property
    def coverage(self) -> float:
        return self.covered / self.shown if self.shown else math.nan

    def text(self) -> str:
        if not self.shown:
            return "none"
        return f"{self.coverage:.3f}" + ("" if self.shown == sum(self.methods.values()) else "*")


def measure(draw: Draw, n: int, trials: int, seed: int) -> Cell:
    rng = np.random.default_rng(seed)
    covered = shown = 0
    methods: dict[str, int] = {}
    for _ in range(trials):
        found, truth = draw(rng, n)
        method = getattr(found, "method", "bootstrap")
        methods[method] = methods.get(method, 0) + 1
        if math.isnan(found.lo) or math.isnan(found.hi):
            continue
        shown += 1
        covered += bool(found.lo <= truth <= found.hi)
    return Cell(covered, shown, methods)


CASES: tuple[tuple[str, str, Draw], ...] = (
    ("owners", "rate, mean 0.5", rate("recall", "gold_covered", "gold_active", 0.5)),
    ("owners", "rate, mean 0.8", rate("recall", "gold_covered", "gold_active", 0.8)),
    ("owners", "rare rate, mean 3%", rate("parse_failure_rate", "parse_failures", "replies", 0.03)),
    ("owners", "rare rate, mean 1%", rate("parse_failure_rate", "parse_failures", "replies", 0.01)),
    ("owners", "macro rate, mean 0.8", rate("precision_macro", "stored_precise", "facts", 0.8)),
    ("owners", "RMST (3 sessions)", rmst),
    ("questions", "QA category, 14 owners, accuracy 0.5", qa_category(0.5)),
    ("questions", "QA category, 14 owners, accuracy 0.8", qa_category(0.8)),
    ("questions", "QA category, 14 owners, accuracy 0.95", qa_category(0.95)),
)


def _methods(cells: list[Cell]) -> str:
    seen: dict[str, int] = {}
    for cell in cells:
        for name, count in cell.methods.items():
            seen[name] = seen.get(name, 0) + count
    total = sum(seen.values())
    return ", ".join(f"{k} {v / total:.0%}" for k, v in sorted(seen.items(), key=lambda x: -x[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=1000, help="simulations per cell")
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    start = time.perf_counter()
    missed: list[str] = []
    for by in ("owners", "questions"):
        sizes = OWNERS if by == "owners" else QUESTIONS
        print(f"\ncoverage of the printed 95% interval by {by} ({args.trials} trials per cell)")
        print(f"  {'case':40s}" + "".join(f"{n:>8d}" for n in sizes) + "   methods used")
        for k, (kind, name, draw) in enumerate(CASES):
            if kind != by:
                continue
            cells = [measure(draw, n, args.trials, args.seed + 100 * k + n) for n in sizes]
            print(f"  {name:40s}" + "".join(f"{c.text():>8s}" for c in cells), end="")
            print(f"   {_methods(cells)}")
            for n, cell in zip(sizes, cells, strict=True):
                if cell.shown and cell.coverage < GOAL:
                    missed.append(f"{name}, {n} {by}: {cell.coverage:.3f}")
    print("\n'none': memlab prints no interval (too few owners); '*': in some trials only")
    print(f"{time.perf_counter() - start:.0f} s")
    if missed:
        print(f"GOAL MISSED (coverage >= {GOAL}): " + "; ".join(missed))
        return 1
    print(f"all goals met: coverage >= {GOAL} wherever an interval is printed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

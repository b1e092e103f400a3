"""The consolidation curve's collapse flag, simulated: false flags per curve and power.

Each simulated curve has ``--owners`` owners with ``--questions`` questions each, all answered
correctly when first asked after session 0 (that is why they are asked again), a reference
re-ask right away and re-asks after sessions 1..``--sessions``. Every re-ask is a fresh draw,
right with probability ``r`` (the re-ask accuracy: answer and judge noise) while the memory
still holds the answer. The tables go through :func:`memlab.scoring.consolidation.curve_table`
with the default statistics options, as a run's curve does.

- *faithful but shrinking*: the memory shrinks to 60-90% of its size and forgets nothing, at
  ``r`` = 0.9 and 0.95. A flag anywhere on the curve is a false flag. Goal: at most 5% of
  curves at the flag's level (:data:`memlab.scoring.inference.collapse.FLAG_LEVEL`, 4%); the
  shares at 3% and 5% are printed beside it for comparison, and the share of curves the
  former rule would have flagged (displayed upper bound of retained below 100% and of size
  below 1 at some session).
- *true collapse*: from session ``--sessions // 2`` on the memory is at 40-80% of its size and
  each question is lost (never answered right again) with probability 0.4, at ``r`` = 0.9.
  Goal: at least 95% of curves flagged at a collapsed session.

Every share is printed with its 95% Clopper-Pearson interval (the Monte-Carlo error of the
simulation): over 200 curves a 5% share scatters by about 1.5 points, over 1,000 by about 0.7.
The goals are judged on the measured shares over ``--curves`` curves (1,000 by default): a flag
at 4% that holds its level has an expected share of at most 4%, so its 1,000-curve share
exceeds 5% by chance in under 5% of runs. Exits 1 when a goal is missed.

Usage::

    python benchmarks/collapse_flag.py                # 1,000 curves per case, ~5 CPU-minutes
    python benchmarks/collapse_flag.py --curves 200   # quicker, noisier
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from memlab.scoring.consolidation import collapsed, curve_table
from memlab.scoring.inference.collapse import FLAG_LEVEL

FALSE_FLAG_GOAL = 0.05
POWER_GOAL = 0.95
LOSS = 0.4
LEVELS = (0.03, FLAG_LEVEL, 0.05)
"""Levels the shares are counted at from the same curves (the flag's own among them)."""


def _curve(
    rng: np.random.Generator, args: argparse.Namespace, accuracy: float, collapse: bool
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One simulated curve: re-asked answer rows and memory sizes."""
    start = args.sessions // 2
    answers: list[dict[str, Any]] = []
    sizes: list[dict[str, Any]] = []
    for o in range(args.owners):
        user = f"u{o:02d}"
        first = float(rng.uniform(200, 1000))
        lost = rng.random(args.questions) < LOSS
        for index in range(args.sessions + 1):
            low, high = (0.4, 0.8) if collapse and index >= start else (0.6, 0.9)
            size = first if index == 0 else first * float(rng.uniform(low, high))
            sizes.append(
                {"lane_id": "a", "sample": 0, "user_id": user, "session_index": index,
                 "memory_tokens": size, "days": float(index)}
            )  # fmt: skip
            for q in range(args.questions):
                gone = collapse and index >= start and bool(lost[q])
                right = not gone and bool(rng.random() < accuracy)
                answers.append(
                    {"lane_id": "a", "sample": 0, "user_id": user, "question_id": f"q{q}",
                     "session_index": index, "asked_at": 0, "condition": "memory",
                     "category": "single-hop", "kind": "answerable", "abstained": False,
                     "verdicts": {"j": {"answer": right}}}
                )  # fmt: skip
    return pd.DataFrame(answers), pd.DataFrame(sizes)


def _rate(
    args: argparse.Namespace, accuracy: float, collapse: bool, seed: int
) -> tuple[dict[float, int], int]:
    """Curves flagged (at a collapsed session under collapse) at each of :data:`LEVELS`, and,
    for comparison, the curves the former 100%-reference rule flags."""
    rng = np.random.default_rng(seed)
    flagged = dict.fromkeys(LEVELS, 0)
    former = 0
    start = args.sessions // 2 if collapse else 1
    for _ in range(args.curves):
        table = curve_table(*_curve(rng, args, accuracy, collapse), "j")
        later = table[table["session_index"] >= start]
        points = later[["collapse_p", "size_ratio_hi"]].to_numpy()
        for level in LEVELS:
            flagged[level] += any(collapsed(p, hi, level) for p, hi in points)
        old = (later["retained_hi"].round(3) < 1.0) & (later["size_ratio_hi"].round(2) < 1.0)
        former += bool(old.any())
    return flagged, former


def _share(count: int, total: int) -> str:
    """``5.7% [4.4, 7.3]``: a share with its 95% Clopper-Pearson interval, in percent."""
    lo = stats.beta.ppf(0.025, count, total - count + 1) if count > 0 else 0.0
    hi = stats.beta.ppf(0.975, count + 1, total - count) if count < total else 1.0
    return f"{count / total:.1%} [{lo * 100:.1f}, {hi * 100:.1f}]"


def _by_level(flagged: dict[float, int], total: int) -> str:
    return "; ".join(
        f"{level:.0%}{' (flag)' if level == FLAG_LEVEL else ''}: {_share(count, total)}"
        for level, count in flagged.items()
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--curves", type=int, default=1000)
    parser.add_argument("--owners", type=int, default=14)
    parser.add_argument("--questions", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=10)
    args = parser.parse_args(argv)
    missed = False
    total = args.curves
    print(f"{total} curves, {args.owners} owners x {args.questions} questions, "
          f"{args.sessions} later sessions; shares with 95% Clopper-Pearson intervals")  # fmt: skip
    for accuracy in (0.9, 0.95):
        flagged, former = _rate(args, accuracy, collapse=False, seed=int(accuracy * 100))
        missed |= flagged[FLAG_LEVEL] / total > FALSE_FLAG_GOAL
        print(
            f"faithful, shrinking, re-ask accuracy {accuracy}: false flags per curve at level "
            f"{_by_level(flagged, total)} (goal <= {FALSE_FLAG_GOAL:.0%} at the flag's level; "
            f"former 100% rule: {former / total:.1%})"
        )
    flagged, former = _rate(args, 0.9, collapse=True, seed=7)
    missed |= flagged[FLAG_LEVEL] / total < POWER_GOAL
    print(
        f"true collapse (lose {LOSS:.0%} from session {args.sessions // 2}, 40-80% size), "
        f"re-ask accuracy 0.9: flagged at level {_by_level(flagged, total)} "
        f"(goal >= {POWER_GOAL:.0%} at the flag's level; former rule: {former / total:.1%})"
    )
    print("MISSED" if missed else "all goals met")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())

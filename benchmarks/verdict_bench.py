"""Verdicts beside their intervals, end to end: the simulated model through the real pipeline.

Each pair is one sweep of the bundled ``personas`` dataset (14 owners, 5 sessions each) with
two lanes of the simulated model, compared with :func:`memlab.scoring.comparing.comparison.compare`
as ``memlab compare`` and the reports do:

- **gain**: the candidate's profile proposes each revealed fact with probability 0.8, the
  baseline's with 0.7, the same seed (each fact the baseline stores the candidate stores too):
  a true recall gain of 10 points and nothing else;
- **A/A**: the same profile (0.7) with two different seeds: no true difference.

Printed: how often recall reads "better" (power), how often any primary metric reads
significant under A/A (the family-wise false-positive rate), and over every row of every table
whether the interval shown excludes 0 exactly when the verdict names a direction. Goal: that
agreement is 100%; the other two are figures (40 pairs give them to about +-6 points).

Usage::

    python benchmarks/verdict_bench.py              # 40 pairs of each, about 8 minutes
    python benchmarks/verdict_bench.py --pairs 10

The exit status is 1 when a verdict and its interval disagree.
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from memlab.datasets.loader import load_dataset
from memlab.datasets.registry import resolve_dataset
from memlab.grids.grid import Grid
from memlab.runs.run import Run
from memlab.scoring.comparing.comparison import compare
from memlab.simulation.model import SimulatedBackend
from memlab.sweeps.driver import sweep

PROFILE = (
    "name: {name}\npropose_rate: {rate}\nwording: {{verbatim: 1.0}}\nconfidence: {{0.95: 1.0}}\n"
    "remove_retracted: 0.9\nfailures: {{fenced: 0.05}}\n"
)
DIRECTIONS = {"better", "worse", "better (exploratory)", "worse (exploratory)"}


def _agrees(row: pd.Series) -> bool:
    """The interval excludes 0 exactly when the verdict names a direction."""
    lo, hi = float(row["delta_lo"]), float(row["delta_hi"])
    excludes = not math.isnan(lo) and (lo > 0 or hi < 0)
    return excludes == (str(row["verdict"]) in DIRECTIONS)


def _pair(workdir: Path, name: str, profiles: list[Path], seeds: list[int]) -> Run:
    """One sweep: a lane per profile (same seed) or per seed (same profile)."""
    owners = load_dataset(resolve_dataset("personas"))
    backends = {f"sim:{path}": SimulatedBackend(path, dataset=owners) for path in profiles}
    base: dict[str, object] = {"fact_confidence_threshold": 0.5, "max_facts": 500}
    if len(profiles) == 1:
        axes: dict[str, list[object]] = {"seed": list(seeds)}
        base["backend"] = f"sim:{profiles[0]}"
    else:
        axes = {"backend": [f"sim:{path}" for path in profiles]}
        base["seed"] = seeds[0]
    grid = Grid.from_mapping({"name": name, "dataset": "personas", "base": base, "axes": axes})
    return sweep(
        "personas",
        grid,
        runs_dir=workdir,
        progress=False,
        resume=False,
        max_workers=1,
        backend_factory=lambda spec: backends[spec],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=40, help="pairs of each kind")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    started = time.perf_counter()
    better = aa_significant = rows = agreeing = 0
    with tempfile.TemporaryDirectory(prefix="memlab-verdicts-") as tmp:
        workdir = Path(tmp)
        base, cand = workdir / "base.yaml", workdir / "cand.yaml"
        base.write_text(PROFILE.format(name="base", rate=0.7), encoding="utf-8")
        cand.write_text(PROFILE.format(name="cand", rate=0.8), encoding="utf-8")
        for k in range(args.pairs):
            gain = compare(_pair(workdir, f"gain-{k}", [base, cand], [k]))
            same = compare(_pair(workdir, f"aa-{k}", [base], [2 * k, 2 * k + 1]))
            better += bool(gain.set_index("metric").loc["recall", "verdict"] == "better")
            aa_significant += bool(same.loc[same["role"] == "primary", "significant"].any())
            for table in (gain, same):
                rows += len(table)
                agreeing += sum(_agrees(row) for _, row in table.iterrows())
    n = args.pairs
    print(f"personas (14 owners), simulated model, {n} pairs of each kind")
    print(f"  +10-point recall, same seed: recall 'better' in {better}/{n} ({better / n:.0%})")
    print(f"  A/A, two seeds: any primary metric significant in {aa_significant}/{n}")
    print(f"  verdict agrees with the interval beside it: {agreeing}/{rows} rows (goal: all)")
    print(f"  [{time.perf_counter() - started:.0f} s]")
    return 0 if agreeing == rows else 1


if __name__ == "__main__":
    sys.exit(main())

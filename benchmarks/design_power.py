"""Power of the paired comparison under both designs of a simulated A/B, end to end.

Each pair is one sweep of the bundled ``personas`` dataset (14 owners, 5 sessions each) with
two lanes of the simulated model, compared with :func:`memlab.scoring.comparing.comparison.compare`
as ``memlab compare`` does. The candidate proposes each revealed fact with probability 0.8,
the baseline with 0.7: a true recall gain of 10 points. Two designs (the profile's ``draws``):

- **coupled** (the default): both lanes draw from the same hashes, so each fact the baseline
  stores the candidate stores too (common random numbers) and no owner gets worse;
- **independent**: the candidate's draws mix in its own profile, as two replays of a real
  model with their own sampling noise would be.

Printed per design: how often recall reads "better" (power, with a 95% Wilson interval), the
median minimum detectable effect (80% power) the comparison states, and whether every verdict
agrees with its interval. Goals:

- the stated MDE is honest under both designs: where power is below 80% beyond the
  interval, the median stated MDE is above the true gain (the comparison says a 10-point gain
  is not reliably detectable rather than missing it in silence);
- the designs differ: coupled power exceeds independent power by more than two standard
  errors (otherwise the option does not do what it says);
- every verdict agrees with its interval.

Usage::

    python benchmarks/design_power.py              # 60 pairs per design, about 6 minutes
    python benchmarks/design_power.py --pairs 10

The exit status is 1 when a goal is missed.
"""

from __future__ import annotations

import argparse
import logging
import math
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from memlab.datasets.loader import load_dataset
from memlab.datasets.registry import resolve_dataset
from memlab.grids.grid import Grid
from memlab.scoring.comparing.comparison import compare
from memlab.simulation.model import SimulatedBackend
from memlab.sweeps.driver import sweep

PROFILE = (
    "name: {name}\npropose_rate: {rate}\nwording: {{verbatim: 1.0}}\nconfidence: {{0.95: 1.0}}\n"
    "remove_retracted: 0.9\nfailures: {{fenced: 0.05}}\ndraws: {draws}\n"
)
DIRECTIONS = {"better", "worse", "better (exploratory)", "worse (exploratory)"}
TRUE_GAIN = 0.10
POWER = 0.80


@dataclass
class Tally:
    """One design's pairs."""

    better: int = 0
    mdes: list[float] = field(default_factory=list)
    rows: int = 0
    agreeing: int = 0


def _agrees(row: pd.Series) -> bool:
    """The interval excludes 0 exactly when the verdict names a direction."""
    lo, hi = float(row["delta_lo"]), float(row["delta_hi"])
    excludes = not math.isnan(lo) and (lo > 0 or hi < 0)
    return excludes == (str(row["verdict"]) in DIRECTIONS)


def _wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion."""
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def _pair(workdir: Path, name: str, profiles: list[Path], seed: int) -> pd.DataFrame:
    owners = load_dataset(resolve_dataset("personas"))
    backends = {f"sim:{path}": SimulatedBackend(path, dataset=owners) for path in profiles}
    base = {"fact_confidence_threshold": 0.5, "max_facts": 500, "seed": seed}
    axes = {"backend": list(backends)}
    grid = Grid.from_mapping({"name": name, "dataset": "personas", "base": base, "axes": axes})
    run = sweep(
        "personas",
        grid,
        runs_dir=workdir,
        progress=False,
        resume=False,
        max_workers=1,
        backend_factory=lambda spec: backends[spec],
    )
    return compare(run)


def _profiles(workdir: Path, design: str) -> list[Path]:
    paths = []
    for name, rate in (("base", 0.7), ("cand", 0.8)):
        path = workdir / f"{design}-{name}.yaml"
        draws = design if name == "cand" else "coupled"
        path.write_text(PROFILE.format(name=name, rate=rate, draws=draws), encoding="utf-8")
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=60, help="pairs per design")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    started = time.perf_counter()
    tallies = {design: Tally() for design in ("coupled", "independent")}
    with tempfile.TemporaryDirectory(prefix="memlab-designs-") as tmp:
        workdir = Path(tmp)
        for design, tally in tallies.items():
            profiles = _profiles(workdir, design)
            for k in range(args.pairs):
                table = _pair(workdir, f"{design}-{k}", profiles, seed=k)
                recall = table.set_index("metric").loc["recall"]
                tally.better += bool(recall["verdict"] == "better")
                tally.mdes.append(float(recall["mde"]))
                tally.rows += len(table)
                tally.agreeing += sum(_agrees(row) for _, row in table.iterrows())
    n, ok = args.pairs, True
    print(f"personas (14 owners), simulated model, true recall gain +10 pts, {n} pairs per design")
    for design, tally in tallies.items():
        power, (lo, hi) = tally.better / n, _wilson(tally.better, n)
        mde = statistics.median(m for m in tally.mdes if math.isfinite(m))
        print(
            f"  {design:11s}: recall 'better' in {tally.better}/{n} ({power:.0%}, 95% "
            f"[{lo:.0%}, {hi:.0%}]); median stated MDE {mde * 100:.1f} pts; verdicts agreeing "
            f"with their interval {tally.agreeing}/{tally.rows}"
        )
        ok &= tally.agreeing == tally.rows
        ok &= hi >= POWER or mde > TRUE_GAIN
    coupled, independent = (tallies[d].better / n for d in ("coupled", "independent"))
    se = math.sqrt((coupled * (1 - coupled) + independent * (1 - independent)) / n)
    ok &= coupled - independent > 2 * se
    print(f"  coupled - independent: {(coupled - independent) * 100:.0f} pts (SE {se * 100:.1f})")
    print(
        "  goals: power below 80% only with a median MDE above the gain; coupled above "
        "independent by > 2 SE; every verdict agrees with its interval: "
        + ("met" if ok else "MISSED")
    )
    print(f"  [{time.perf_counter() - started:.0f} s]")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Which interval a rate gets, and below how many owners memlab prints none.

The expanded bootstrap (:func:`memlab.scoring.inference.stats.bootstrap`) covers 95% with enough
owners and a rate away from 0 and 1, and falls short otherwise: with 2 owners its bounds are the
range of the two owners' values, and at a mean of 3% it misses often with 14 owners. So:

- a rate (a ratio of sums over owners, micro or macro) near 0 or 1 (a pooled value at most
  :data:`EDGE` from either end) gets the *clustered exact* interval (:func:`clustered_exact`);
- any other rate, and the restricted mean survival time, gets the bootstrap interval;
- on fewer owners than the chosen method's measured minimum there is no interval ("too few
  owners for an interval (n = 2)"). The clustered exact interval covers with 2 to 4 owners
  too, but it then spans most of 0 to 1 away from the edges, so only edge rates use it there.

The minimums are data (:data:`MIN_OWNERS`), read from the coverage measured by
``benchmarks/interval_coverage.py``: the fewest owners from which every measured case of the
method covered at least :data:`COVERAGE_GOAL` (docs/statistics.md has the table).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from scipy import special

__all__ = [
    "COVERAGE_GOAL",
    "EDGE",
    "MIN_OWNERS",
    "clustered_exact",
    "interval_method",
    "paired_method",
    "too_few_text",
]

COVERAGE_GOAL = 0.93
"""A 95% interval is printed only where its coverage was measured at least this high."""

EDGE = 0.1
"""A pooled rate this close to 0 or 1 gets the clustered exact interval at any owner count."""

MIN_OWNERS: dict[str, int] = {
    "bootstrap": 6,
    "bootstrap_survival": 6,
    "clustered_exact": 2,
    "paired": 6,
    "paired_edge": 14,
}
"""The fewest owners at which each method's coverage was measured at least
:data:`COVERAGE_GOAL` in every case of ``benchmarks/interval_coverage.py`` (owner counts 2, 3,
4, 6, 14, 30): ``bootstrap`` for rates, ``bootstrap_survival`` for the restricted mean
survival time, ``clustered_exact`` for rates (means 0.5, 0.8, 3% and 1%); ``paired`` and
``paired_edge`` for the delta of two configurations on the same owners
(:func:`paired_method`, measured by ``benchmarks/paired_coverage.py``: rates 0.5 and 0.8, and
3% and 1% near the edge, whose paired bootstrap covered 0.908 on 6 owners)."""


def interval_method(*, ratio: bool, owners: int, estimate: float, bounded: bool = True) -> str:
    """The method of a statistic's interval, or ``"too few owners"`` when none is printed.

    Args:
        ratio: The statistic is a ratio of sums over owners.
        owners: The owners that can change it.
        estimate: Its value over all of them.
        bounded: The ratio is a rate in [0, 1] (every owner's numerator between 0 and its
            denominator); only a rate near 0 or 1 takes the clustered exact interval.
    """
    if owners < 2:
        return "too few owners"
    edge = bounded and _near_edge(estimate)
    method = "bootstrap" if ratio else "bootstrap_survival"
    if ratio and edge:
        method = "clustered_exact"
    return method if owners >= MIN_OWNERS[method] else "too few owners"


def paired_method(*, owners: int, values: tuple[float, float], rate: bool) -> str:
    """The method of the delta's interval of two configurations on the same owners
    (``"paired"``, or ``"paired_edge"`` for a rate with either side's pooled value near 0 or
    1, where the paired bootstrap needs more owners to cover), or ``"too few owners"`` when
    none is printed.

    Args:
        owners: The owners that can change the delta.
        values: The baseline's and the candidate's values over all of them.
        rate: The statistic is a rate in [0, 1] on both sides.
    """
    edge = rate and any(_near_edge(value) for value in values)
    method = "paired_edge" if edge else "paired"
    return method if owners >= max(MIN_OWNERS[method], 2) else "too few owners"


def _near_edge(value: float) -> bool:
    """A rate at most :data:`EDGE` from 0 or 1."""
    return math.isfinite(value) and not EDGE < value < 1 - EDGE


def too_few_text(owners: int) -> str:
    """What is printed instead of an interval: ``too few owners for an interval (n = 2)``."""
    return f"too few owners for an interval (n = {owners})"


def clustered_exact(
    num: npt.ArrayLike, den: npt.ArrayLike, level: float = 0.95
) -> tuple[float, float]:
    """A Clopper-Pearson interval on the effective sample size of clustered counts.

    ``num``/``den`` are the owners' numerators and denominators (a macro rate passes each
    owner's ratio over 1). The pooled rate ``p = sum(num) / sum(den)`` has the between-owner
    variance ``v = n / (n - 1) * sum((num - p den)^2) / sum(den)^2``; the effective sample size
    ``p (1 - p) / v`` (at most ``sum(den)``) is shrunk by ``(z / t[n - 1])^2`` for the few
    owners the variance is estimated from, and the exact binomial interval is taken for
    ``p`` times that many trials (Korn and Graubard 1998). With no event at all (or every
    trial an event) the spread cannot be estimated: the count is taken as ``sum(den)``
    independent trials, shrunk the same way, and the upper bound is
    ``1 - (alpha / 2)^(1 / trials)`` (about 3.7 / trials: the two-sided rule of three).
    """
    num_v = np.asarray(num, dtype=float)
    den_v = np.asarray(den, dtype=float)
    owners, total = num_v.size, float(den_v.sum())
    if owners < 2 or not total > 0 or np.isnan(num_v).any() or np.isnan(den_v).any():
        return math.nan, math.nan
    p = min(max(float(num_v.sum()) / total, 0.0), 1.0)
    variance = owners / (owners - 1) * float(((num_v - p * den_v) ** 2).sum()) / total**2
    trials = total if variance <= 0 else min(total, p * (1 - p) / variance)
    alpha = 1 - level
    z = float(special.ndtri(1 - alpha / 2))
    t = float(special.stdtrit(owners - 1, 1 - alpha / 2))
    trials *= (z / t) ** 2
    events = p * trials
    lo = 0.0 if events <= 0 else float(special.betaincinv(events, trials - events + 1, alpha / 2))
    hi = (
        1.0
        if events >= trials
        else float(special.betaincinv(events + 1, trials - events, 1 - alpha / 2))
    )
    return lo, hi

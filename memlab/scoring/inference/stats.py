"""Estimators and their intervals, with owners as the unit of independence.

An owner's sessions depend on each other (the memory carries over from one to the next), so
owners are what gets resampled, never sessions or calls. Every metric with an interval is a
statistic of *sums over owners* of per-owner columns (an :class:`Estimator`): a rate is the
ratio of two sums (micro-averaged), a macro rate the sum of per-owner rates over the number of
owners that have one, the restricted mean survival time a function of per-time event and
at-risk sums (:mod:`memlab.scoring.inference.survival`). Owners that cannot change a metric (no gold
facts for recall, no stored facts for precision) are left out of its ``n``.

- :func:`bootstrap`: the expanded percentile interval (Hesterberg 2015) of a statistic, owners
  resampled with replacement (the sums of a resample are ``weights @ columns``).
- The resampling helpers (:func:`bootstrap_weights`, :func:`swap_masks`,
  :func:`order_interval`, :func:`bootstrap_p`) are shared with the paired tests of two
  configurations, :mod:`memlab.scoring.inference.paired_tests`.

Repeated samples of one owner (the same lane replayed several times) are averaged within the
owner before anything here sees them: see :func:`memlab.scoring.metrics.owner_counts`.
The simulations in ``tests/test_stats.py`` check the false-positive rate, the coverage and the
power of these procedures.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt
from scipy import special

from memlab.core.base.machine import memory_budget
from memlab.scoring.inference.coverage import clustered_exact, interval_method
from memlab.scoring.inference.stat_options import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    MAX_RESAMPLES,
    StatOptions,
    StatsError,
)

__all__ = [
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "MAX_RESAMPLES",
    "BoolArray",
    "Estimator",
    "FloatArray",
    "Interval",
    "Intervals",
    "StatOptions",
    "StatsError",
    "as_matrix",
    "bootstrap",
    "bootstrap_p",
    "bootstrap_ratios",
    "bootstrap_weights",
    "empty_vector",
    "interval_tail",
    "is_rate",
    "order_interval",
    "ratio",
    "ratio_estimator",
    "spread",
    "swap_masks",
    "t_quantile",
]

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
Statistic = Callable[[FloatArray], FloatArray]
"""Column sums over owners, shape ``(draws, columns)`` -> the statistic, shape ``(draws,)``."""


def ratio(num: FloatArray, den: FloatArray, empty: FloatArray | float = math.nan) -> FloatArray:
    """``num / den`` elementwise; ``empty`` where the denominator is 0 (NaN in, NaN out)."""
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = num / den
    fill = np.broadcast_to(np.asarray(empty, dtype=float), out.shape)
    zero = den == 0
    return np.where(zero & ~np.isnan(num), fill, out)


# ---------------------------------------------------------------------- estimators


@dataclass(frozen=True)
class Estimator:
    """A statistic of column sums over owners (rows of ``columns`` are owners).

    Attributes:
        columns: Per-owner columns, shape ``(owners, p)``.
        statistic: Column sums ``(draws, p)`` -> values ``(draws,)``.
        relevant: Owners that can change the statistic (the others are left out of ``n``);
            ``None``: every owner.
    """

    columns: FloatArray
    statistic: Statistic
    relevant: BoolArray | None = None
    pooled: bool = False
    """The statistic is the ratio of the sums of the two columns (a rate): it may get the
    clustered exact interval (:mod:`memlab.scoring.inference.coverage`)."""

    @property
    def owners(self) -> int:
        """Rows of ``columns``."""
        return int(self.columns.shape[0])

    def mask(self) -> BoolArray:
        """The relevant owners as a boolean row mask."""
        if self.relevant is None:
            return np.ones(self.owners, dtype=bool)
        return np.asarray(self.relevant, dtype=bool)

    def value(self, rows: BoolArray | None = None) -> float:
        """The statistic over all owners (or the selected rows)."""
        columns = self.columns if rows is None else self.columns[rows]
        return float(self.statistic(columns.sum(axis=0)[None, :])[0])


def ratio_estimator(num: npt.ArrayLike, den: npt.ArrayLike, empty: float = math.nan) -> Estimator:
    """``sum(num) / sum(den)``; owners with a zero denominator cannot change it."""
    num_v = np.asarray(num, dtype=float).ravel()
    den_v = np.asarray(den, dtype=float).ravel()
    if num_v.shape != den_v.shape:
        raise StatsError("numerators and denominators need one value per owner each")

    def statistic(sums: FloatArray) -> FloatArray:
        return ratio(sums[:, 0], sums[:, 1], empty)

    # A NaN count stays relevant so that it turns the statistic into NaN, never vanishes.
    relevant = (den_v != 0) | np.isnan(num_v) | np.isnan(den_v)
    return Estimator(np.column_stack([num_v, den_v]), statistic, relevant, pooled=True)


# ---------------------------------------------------------------------- resampling


def _check_size(resamples: int, width: int) -> None:
    """Refuse resample matrices that would not fit in memory (a few float64 copies)."""
    needed = resamples * width * 8 * 6
    budget = memory_budget()
    if needed > budget:
        raise StatsError(
            f"{resamples} resamples over {width} owners or metrics need about "
            f"{needed / 1024**3:.1f} GiB, more than this machine can spare "
            f"({budget / 1024**3:.1f} GiB); use fewer resamples"
        )


_REUSED_ELEMENTS = 4_000_000
"""Resample matrices up to this size (32 MB: 2,000 resamples over 2,000 owners) are drawn
once per process and reused: a report draws the same ones for every lane and metric (the
same owners, resamples and seed give the same draws)."""


def bootstrap_weights(owners: int, resamples: int, seed: int) -> FloatArray:
    """How often each owner is drawn in each resample: shape ``(resamples, owners)``
    (read-only when reused)."""
    if owners * resamples <= _REUSED_ELEMENTS:
        return _reused(_draw_weights, owners, resamples, seed)
    return _draw_weights(owners, resamples, seed)


@lru_cache(maxsize=4)
def _reused(
    draw: Callable[[int, int, int], FloatArray], owners: int, resamples: int, seed: int
) -> FloatArray:
    """``draw(owners, resamples, seed)`` once per process, read-only (see ``_REUSED_ELEMENTS``)."""
    drawn = draw(owners, resamples, seed)
    drawn.setflags(write=False)
    return drawn


def _draw_weights(owners: int, resamples: int, seed: int) -> FloatArray:
    _check_size(resamples, owners)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, owners, size=(resamples, owners))
    # Count the picks per (resample, owner) in one bincount (rng.multinomial is 20x slower).
    flat = (picks + owners * np.arange(resamples)[:, None]).ravel()
    counts = np.bincount(flat, minlength=resamples * owners)
    return counts.reshape(resamples, owners).astype(float)


def swap_masks(owners: int, resamples: int, seed: int) -> tuple[FloatArray, bool]:
    """Which owners swap sides in each permutation: all ``2**owners`` when few, else random
    (read-only when reused, like the bootstrap weights)."""
    if owners < 63 and 2**owners <= resamples:
        codes = np.arange(2**owners)[:, None]
        return ((codes >> np.arange(owners)) & 1).astype(float), True
    if owners * resamples <= _REUSED_ELEMENTS:
        return _reused(_draw_swaps, owners, resamples, seed), False
    return _draw_swaps(owners, resamples, seed), False


def _draw_swaps(owners: int, resamples: int, seed: int) -> FloatArray:
    _check_size(resamples, owners)
    rng = np.random.default_rng(seed + 1)
    return rng.integers(0, 2, size=(resamples, owners)).astype(float)


def t_quantile(p: float, df: int) -> float:
    """Student-t quantile with ``df`` degrees of freedom."""
    return float(special.stdtrit(df, p))


def interval_tail(level: float, owners: int) -> float:
    """Lower tail probability of the expanded percentile interval (Hesterberg 2015).

    Plain bootstrap percentiles are too narrow with few owners (about 92% coverage for a 95%
    interval with 14 owners): the bootstrap spread lacks the ``n / (n - 1)`` factor and the
    normal quantile should be Student's. Taking percentiles at
    ``Phi(-sqrt(n / (n - 1)) * t[n - 1])`` instead of ``(1 - level) / 2`` corrects both.
    """
    t = t_quantile(1 - (1 - level) / 2, owners - 1)
    return float(special.ndtr(-math.sqrt(owners / (owners - 1)) * t))


def _alpha_of_tail(share: float, owners: int) -> float:
    """The ``a`` whose expanded interval has lower tail ``share``: inverts ``interval_tail``."""
    if share <= 0:
        return 0.0
    if share >= 0.5:
        return 1.0
    t = -float(special.ndtri(share)) / math.sqrt(owners / (owners - 1))
    return float(min(1.0, 2.0 * (1.0 - special.stdtr(owners - 1, t))))


def _finite(draws: FloatArray) -> FloatArray:
    return draws[~np.isnan(draws)]


def order_interval(draws: FloatArray, tail: float) -> tuple[float, float]:
    """The interval between the ``j``-th smallest and ``j``-th largest draw,
    ``j = ceil(tail * B) - 1``: it excludes 0 exactly when fewer than ``tail * B`` draws lie
    on 0 or beyond it (what :func:`bootstrap_p` inverts)."""
    finite = np.sort(_finite(draws))
    if finite.size == 0:
        return math.nan, math.nan
    j = max(math.ceil(tail * finite.size) - 1, 0)
    j = min(j, (finite.size - 1) // 2)
    return float(finite[j]), float(finite[finite.size - 1 - j])


def bootstrap_p(draws: FloatArray, owners: int) -> float:
    """The smallest ``a`` whose expanded interval at level ``1 - a`` excludes 0."""
    finite = _finite(draws)
    if finite.size == 0:
        return math.nan
    share = min(int((finite <= 0).sum()), int((finite >= 0).sum())) / finite.size
    return _alpha_of_tail(share, owners)


def spread(draws: FloatArray) -> float:
    """Standard deviation of bootstrap draws (the standard error)."""
    finite = _finite(draws)
    return float(np.std(finite, ddof=1)) if finite.size > 1 else math.nan


# ---------------------------------------------------------------------- one configuration


@dataclass(frozen=True)
class Interval:
    """One statistic over all owners, its interval, standard error and relevant owners.

    ``method``: how the interval was found
    (:func:`memlab.scoring.inference.coverage.interval_method`);
    ``too few owners`` when it has none (NaN bounds)."""

    estimate: float
    lo: float
    hi: float
    se: float
    owners: int
    method: str = "bootstrap"


def bootstrap(estimator: Estimator, options: StatOptions | None = None) -> Interval:
    """The statistic and its interval over the relevant owners: the expanded percentile
    interval, or for a rate near 0 or 1 or on few owners the clustered exact interval, or
    none (NaN bounds) below the owners at which the method's coverage was measured
    (:func:`memlab.scoring.inference.coverage.interval_method`). ``se`` is the bootstrap's either
    way.

    With fewer than two relevant owners there is nothing to resample: the bounds are NaN.
    """
    options = options or StatOptions()
    keep = estimator.mask()
    estimate = estimator.value()
    n = int(keep.sum())
    # A ratio of sums is a rate (the exact interval's domain) only when no owner's numerator
    # exceeds its denominator: a size ratio or tokens per owner is not one.
    rate = is_rate(estimator, keep)
    method = interval_method(ratio=estimator.pooled, owners=n, estimate=estimate, bounded=rate)
    if n < 2 or options.resamples == 0:
        return Interval(estimate, math.nan, math.nan, math.nan, n, method)
    weights = bootstrap_weights(n, options.resamples, options.seed)
    draws = estimator.statistic(weights @ estimator.columns[keep])
    if method == "clustered_exact":
        columns = estimator.columns[keep]
        lo, hi = clustered_exact(columns[:, 0], columns[:, 1], options.level)
    elif method.startswith("bootstrap"):
        lo, hi = order_interval(draws, interval_tail(options.level, n))
    else:
        lo, hi = math.nan, math.nan
    return Interval(estimate, lo, hi, spread(draws), n, method)


def is_rate(estimator: Estimator, keep: BoolArray) -> bool:
    """A ratio of sums that is a rate: no kept owner's numerator outside 0 to its denominator
    (a size ratio or tokens per owner is not one)."""
    kept = estimator.columns[keep]
    return estimator.pooled and bool(
        kept.shape[1] >= 2 and np.all((kept[:, 0] >= 0) & (kept[:, 0] <= kept[:, 1]))
    )


# ---------------------------------------------------------------------- rate matrices


@dataclass(frozen=True)
class Intervals:
    """Per metric: the rate over all owners, its interval and the bootstrap standard error."""

    estimate: FloatArray
    lo: FloatArray
    hi: FloatArray
    se: FloatArray


def as_matrix(values: npt.ArrayLike) -> FloatArray:
    array = np.asarray(values, dtype=float)
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2:
        raise StatsError(f"expected an (owners, metrics) array, got shape {array.shape}")
    return array


def empty_vector(empty: npt.ArrayLike | float, k: int) -> FloatArray:
    return np.broadcast_to(np.asarray(empty, dtype=float), (k,))


def bootstrap_ratios(
    num: npt.ArrayLike,
    den: npt.ArrayLike,
    *,
    empty: npt.ArrayLike | float = math.nan,
    options: StatOptions | None = None,
) -> Intervals:
    """Each column's rate ``sum(num) / sum(den)`` and its bootstrap interval over owners.

    Args:
        num: Per-owner numerators, shape ``(owners, metrics)`` (or ``(owners,)``).
        den: Per-owner denominators, same shape.
        empty: The rate when a denominator sums to 0 (per metric, or one value).
        options: Resamples, seed and level.
    """
    num_m, den_m = as_matrix(num), as_matrix(den)
    empty_v = empty_vector(empty, num_m.shape[1])
    found = [
        bootstrap(ratio_estimator(num_m[:, j], den_m[:, j], float(empty_v[j])), options)
        for j in range(num_m.shape[1])
    ]
    columns = ("estimate", "lo", "hi", "se")
    return Intervals(*(np.array([getattr(f, name) for f in found]) for name in columns))

"""Intervals and paired tests with owners as the unit of independence (numpy only).

An owner's sessions depend on each other (the memory carries over from one to the next), so
owners are what gets resampled, never sessions or calls. Every rate memlab reports is a ratio
of sums over owners (recall = covered gold facts / active gold facts, both summed over owners),
so the functions here take per-owner numerators and denominators of shape
``(owners, metrics)`` and treat all metrics at once:

- :func:`bootstrap_ratios`: percentile bootstrap interval of each rate, owners resampled with
  replacement (the sums of a resample are ``weights @ numerators``).
- :func:`paired_ratio_test`: two configurations on the same owners. The delta's interval comes
  from a paired bootstrap (the same owners drawn for both sides); its p-value from a paired
  sign-flip permutation test: under "no difference" the two configurations' results on an
  owner are exchangeable, so each owner's pair is swapped at random (every one of the
  ``2**owners`` swaps when that is at most the number of resamples, else a random sample).
- :func:`holm`: Holm's step-down adjustment of p-values over a family of tests.
- :func:`min_detectable_effect`: the smallest delta the paired test detects with the given
  power, from the delta's standard error.

Repeated samples of one owner (the same lane replayed several times) are averaged within the
owner before anything here sees them: see :func:`memlab.scoring.metrics.owner_counts`.
The simulations in ``tests/test_stats.py`` check the false-positive rate, the coverage and the
power of these procedures.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from memlab.core.machine import memory_budget
from memlab.scoring.stat_options import (
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
    "Intervals",
    "PairedTest",
    "StatOptions",
    "StatsError",
    "bootstrap_ratios",
    "holm",
    "min_detectable_effect",
    "paired_ratio_test",
    "ratio",
]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Intervals:
    """Per metric: the rate over all owners, its interval and the bootstrap standard error."""

    estimate: FloatArray
    lo: FloatArray
    hi: FloatArray
    se: FloatArray


@dataclass(frozen=True)
class PairedTest:
    """Per metric: candidate minus baseline on shared owners, with interval, p-value and MDE."""

    owners: int
    delta: FloatArray
    lo: FloatArray
    hi: FloatArray
    se: FloatArray
    p_value: FloatArray
    mde: FloatArray


def ratio(num: FloatArray, den: FloatArray, empty: FloatArray | float = math.nan) -> FloatArray:
    """``num / den`` elementwise; ``empty`` where the denominator is 0 (NaN in, NaN out)."""
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = num / den
    fill = np.broadcast_to(np.asarray(empty, dtype=float), out.shape)
    zero = den == 0
    return np.where(zero & ~np.isnan(num), fill, out)


def _as_matrix(values: npt.ArrayLike) -> FloatArray:
    array = np.asarray(values, dtype=float)
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2:
        raise StatsError(f"expected an (owners, metrics) array, got shape {array.shape}")
    return array


def _nan_vector(k: int) -> FloatArray:
    return np.full(k, math.nan)


def _t_quantile(p: float, df: int) -> float:
    """Student-t quantile: exact for 1 and 2 degrees of freedom, else the Cornish-Fisher
    expansion of Abramowitz & Stegun 26.7.5 (error below 0.005 from 3 degrees of freedom)."""
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    x = NormalDist().inv_cdf(p)
    terms = (
        (x**3 + x) / 4,
        (5 * x**5 + 16 * x**3 + 3 * x) / 96,
        (3 * x**7 + 19 * x**5 + 17 * x**3 - 15 * x) / 384,
        (79 * x**9 + 776 * x**7 + 1482 * x**5 - 1920 * x**3 - 945 * x) / 92160,
    )
    return x + math.fsum(term / df ** (i + 1) for i, term in enumerate(terms))


def _tail(level: float, owners: int) -> float:
    """Lower tail probability of the expanded percentile interval (Hesterberg 2015).

    Plain bootstrap percentiles are too narrow with few owners (about 92% coverage for a 95%
    interval with 14 owners): the bootstrap spread lacks the ``n / (n - 1)`` factor and the
    normal quantile should be Student's. Taking percentiles at
    ``Phi(-sqrt(n / (n - 1)) * t[n - 1])`` instead of ``(1 - level) / 2`` corrects both.
    """
    t = _t_quantile(1 - (1 - level) / 2, owners - 1)
    return NormalDist().cdf(-math.sqrt(owners / (owners - 1)) * t)


def _percentiles(draws: FloatArray, level: float, owners: int) -> tuple[FloatArray, FloatArray]:
    """Expanded percentile interval of each column, ignoring NaN draws."""
    tail = _tail(level, owners)
    if not np.isnan(draws).any():  # the common case, and much faster than nanquantile
        lo, hi = np.quantile(draws, [tail, 1 - tail], axis=0)
        return lo, hi
    with warnings.catch_warnings():
        # A metric undefined in every resample (e.g. no labeled facts) gives NaN: expected.
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, hi = np.nanquantile(draws, [tail, 1 - tail], axis=0)
    return lo, hi


def _spread(draws: FloatArray) -> FloatArray:
    """Standard deviation of each column of bootstrap draws (the standard error)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(np.nanstd(draws, axis=0, ddof=1), dtype=float)


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


def _bootstrap_weights(owners: int, resamples: int, seed: int) -> FloatArray:
    """How often each owner is drawn in each resample: shape ``(resamples, owners)``."""
    _check_size(resamples, owners)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, owners, size=(resamples, owners))
    # Count the picks per (resample, owner) in one bincount (rng.multinomial is 20x slower).
    flat = (picks + owners * np.arange(resamples)[:, None]).ravel()
    counts = np.bincount(flat, minlength=resamples * owners)
    return counts.reshape(resamples, owners).astype(float)


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

    With fewer than two owners there is nothing to resample: the bounds are NaN.
    """
    options = options or StatOptions()
    num_m, den_m = _as_matrix(num), _as_matrix(den)
    empty_v = np.broadcast_to(np.asarray(empty, dtype=float), (num_m.shape[1],))
    estimate = ratio(num_m.sum(axis=0), den_m.sum(axis=0), empty_v)
    owners, k = num_m.shape
    if owners < 2 or options.resamples == 0:
        return Intervals(estimate, _nan_vector(k), _nan_vector(k), _nan_vector(k))
    weights = _bootstrap_weights(owners, options.resamples, options.seed)
    draws = ratio(weights @ num_m, weights @ den_m, empty_v)
    lo, hi = _percentiles(draws, options.level, owners)
    return Intervals(estimate, lo, hi, _spread(draws))


def _swap_masks(owners: int, resamples: int, seed: int) -> tuple[FloatArray, bool]:
    """Which owners swap sides in each permutation: all ``2**owners`` when few, else random."""
    if owners < 63 and 2**owners <= resamples:
        codes = np.arange(2**owners)[:, None]
        return ((codes >> np.arange(owners)) & 1).astype(float), True
    _check_size(resamples, owners)
    rng = np.random.default_rng(seed + 1)
    return rng.integers(0, 2, size=(resamples, owners)).astype(float), False


def _sign_flip_p(
    sums: tuple[FloatArray, FloatArray, FloatArray, FloatArray],
    moves: tuple[FloatArray, FloatArray],
    observed: FloatArray,
    empty: FloatArray,
    options: StatOptions,
) -> FloatArray:
    """Two-sided p-value of the observed delta under random swaps within owners."""
    num_a, den_a, num_b, den_b = sums
    move_num, move_den = moves  # per owner: b - a, shape (owners, k)
    owners = move_num.shape[0]
    masks, exact = _swap_masks(owners, options.resamples, options.seed)
    shift_num, shift_den = masks @ move_num, masks @ move_den
    permuted = ratio(num_b - shift_num, den_b - shift_den, empty) - ratio(
        num_a + shift_num, den_a + shift_den, empty
    )
    # Ties with the observed value count as extreme; the tolerance absorbs rounding.
    threshold = np.abs(observed) * (1 - 1e-9) - 1e-12
    with np.errstate(invalid="ignore"):
        extreme = (np.abs(permuted) >= threshold).sum(axis=0)
    count = float(len(masks))
    # A random sample includes the observed arrangement by convention (Phipson & Smyth 2010).
    p = extreme / count if exact else (extreme + 1) / (count + 1)
    return np.where(np.isnan(observed), math.nan, np.minimum(p, 1.0))


def paired_ratio_test(
    baseline: tuple[npt.ArrayLike, npt.ArrayLike],
    candidate: tuple[npt.ArrayLike, npt.ArrayLike],
    *,
    empty: npt.ArrayLike | float = math.nan,
    options: StatOptions | None = None,
) -> PairedTest:
    """Compare two configurations' rates on the same owners (rows aligned by owner).

    Args:
        baseline: ``(numerators, denominators)`` per owner, each ``(owners, metrics)``.
        candidate: The same for the other configuration, rows in the same owner order.
        empty: The rate when a denominator sums to 0.
        options: Resamples, seed, level, alpha and power.

    Returns:
        ``delta`` = candidate rate - baseline rate, its paired-bootstrap interval and standard
        error, the sign-flip p-value (two-sided) and the minimum detectable effect.
    """
    options = options or StatOptions()
    num_a, den_a = _as_matrix(baseline[0]), _as_matrix(baseline[1])
    num_b, den_b = _as_matrix(candidate[0]), _as_matrix(candidate[1])
    if not num_a.shape == den_a.shape == num_b.shape == den_b.shape:
        raise StatsError("baseline and candidate need arrays of the same (owners, metrics) shape")
    owners, k = num_a.shape
    empty_v = np.broadcast_to(np.asarray(empty, dtype=float), (k,))
    sums = (num_a.sum(axis=0), den_a.sum(axis=0), num_b.sum(axis=0), den_b.sum(axis=0))
    delta = ratio(sums[2], sums[3], empty_v) - ratio(sums[0], sums[1], empty_v)
    nan = _nan_vector(k)
    if owners < 2 or options.resamples == 0:
        return PairedTest(owners, delta, nan, nan, nan, nan, nan)
    weights = _bootstrap_weights(owners, options.resamples, options.seed)
    side_a = ratio(weights @ num_a, weights @ den_a, empty_v)
    side_b = ratio(weights @ num_b, weights @ den_b, empty_v)
    lo, hi = _percentiles(side_b - side_a, options.level, owners)
    se = _spread(side_b - side_a)
    p = _sign_flip_p(sums, (num_b - num_a, den_b - den_a), delta, empty_v, options)
    # Identical per-owner results leave the paired spread at 0, which says nothing about a
    # future difference: fall back to the spread of two independent configurations.
    unpaired = np.sqrt(_spread(side_a) ** 2 + _spread(side_b) ** 2)
    spread = np.where(se > 0, se, unpaired)
    mde = min_detectable_effect(spread, owners, alpha=options.alpha, power=options.power)
    return PairedTest(owners, delta, lo, hi, se, p, mde)


def min_detectable_effect(
    se: npt.ArrayLike, owners: int, *, alpha: float = 0.05, power: float = 0.80
) -> FloatArray:
    """Smallest true delta a two-sided paired test at ``alpha`` detects with ``power``.

    ``(t[1 - alpha/2] + t[power]) * se * sqrt(n / (n - 1))`` with Student-t quantiles on
    ``n - 1`` degrees of freedom, ``se`` the bootstrap standard error of the delta and ``n`` the
    owners (the square root undoes the bootstrap's ``(n - 1) / n`` shrinkage of the variance).
    Infinite when the sign-flip test cannot reach ``alpha`` with this many owners at all (its
    smallest p-value is ``2 / 2**n``); NaN when there is no spread to estimate from.
    """
    se_v = np.asarray(se, dtype=float)
    if owners < 2 or 2.0 / 2.0**owners > alpha:
        return np.full(se_v.shape, math.inf)
    df = owners - 1
    factor = (_t_quantile(1 - alpha / 2, df) + _t_quantile(power, df)) * math.sqrt(owners / df)
    return np.where(se_v > 0, factor * se_v, math.nan)


def holm(p_values: npt.ArrayLike) -> FloatArray:
    """Holm-adjusted p-values (NaN entries stay NaN and do not count as tests).

    Reject the hypotheses whose adjusted p-value is at most alpha: this controls the chance
    of any false rejection in the family at alpha.
    """
    p = np.asarray(p_values, dtype=float).ravel()
    out = np.full(p.shape, math.nan)
    valid = np.flatnonzero(~np.isnan(p))
    if valid.size == 0:
        return out
    order = valid[np.argsort(p[valid], kind="stable")]
    m = order.size
    scaled = p[order] * (m - np.arange(m))
    out[order] = np.minimum(np.maximum.accumulate(scaled), 1.0)
    return out

"""Paired tests of two configurations on the same owners, and families of them.

- :func:`paired`: two configurations on the same owners. The delta's bootstrap draws use the
  same owners on both sides; a paired sign-flip permutation test swaps each owner's columns
  between the sides at random (every swap when ``2**owners`` is at most the resamples).

**Verdicts agree with their intervals.** A delta is significant at a level ``a`` only when
both the sign-flip test and the bootstrap interval at level ``1 - a`` reject "no difference":
its p-value is the larger of the sign-flip p-value and the bootstrap p-value (the smallest
``a`` whose interval excludes 0, computed by inverting the interval exactly). Over a family of
tests, Holm's step-down (:func:`holm_steps`) gives each test the level of the step that decided
it: ``alpha / (m - k)`` for the ``k``-th rejected hypothesis (0-based, smallest p first), and the
level of the first step that failed for every hypothesis not rejected. The interval drawn beside
a verdict is taken at that level (:meth:`Paired.at`) and extended to 0 when the sign-flip test
alone does not reject (few owners changed), so a significant delta's interval always excludes
0 and any other interval includes it; the minimum detectable effect is stated at the same level.

The estimators, the resampling and the one-configuration intervals are
:mod:`memlab.scoring.inference.stats`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from scipy import special

from memlab.scoring.inference.coverage import clustered_exact, paired_method
from memlab.scoring.inference.stat_options import StatOptions, StatsError
from memlab.scoring.inference.stats import (
    BoolArray,
    Estimator,
    FloatArray,
    as_matrix,
    bootstrap_p,
    bootstrap_weights,
    empty_vector,
    interval_tail,
    is_rate,
    order_interval,
    ratio_estimator,
    spread,
    swap_masks,
    t_quantile,
)

__all__ = [
    "Paired",
    "PairedTest",
    "holm",
    "holm_steps",
    "min_detectable_effect",
    "min_test_owners",
    "owners_to_detect",
    "paired",
    "paired_ratio_test",
]


# ---------------------------------------------------------------------- two configurations


@dataclass(frozen=True)
class Paired:
    """Candidate minus baseline on shared owners.

    Attributes:
        owners: Owners relevant to the statistic on either side (the ``n`` of the test).
        delta: Candidate value minus baseline value.
        se: Bootstrap standard error of the delta.
        p_perm: Two-sided sign-flip permutation p-value.
        p_boot: The smallest ``a`` at which the bootstrap interval excludes 0.
        changed: False when every owner's columns are the same on both sides, or the delta is
            0 in every resample (no change: not a test).
        draws: The paired bootstrap draws of the delta.
        planning_se: The standard error the MDE is stated with: ``se``, or with identical
            per-owner results (a paired spread of 0 says nothing about a future difference)
            the spread of two independent configurations; for rates where even that is 0
            (every owner at 0 events on both sides), the spread implied by each side's
            clustered exact interval, so a rate's MDE is never NaN.
    """

    owners: int
    delta: float
    se: float
    p_perm: float
    p_boot: float
    changed: bool
    draws: FloatArray = field(repr=False)
    planning_se: float = math.nan
    method: str = "paired"
    """How the delta's interval is found
    (:func:`memlab.scoring.inference.coverage.paired_method`); ``too few owners`` when none
    is printed."""

    @property
    def p_value(self) -> float:
        """``max(p_perm, p_boot)``: significant at ``a`` only when both reject."""
        if math.isnan(self.p_perm) or math.isnan(self.p_boot):
            return math.nan
        return max(self.p_perm, self.p_boot)

    def at(self, alpha: float) -> tuple[float, float]:
        """The delta's interval at level ``1 - alpha`` (:meth:`interval`), or none (NaN) on
        fewer owners than its coverage was measured on
        (``method``: :func:`memlab.scoring.inference.coverage.paired_method`)."""
        if self.method == "too few owners":
            return math.nan, math.nan
        return self.interval(alpha)

    def interval(self, alpha: float) -> tuple[float, float]:
        """The delta's interval at level ``1 - alpha`` on any number of owners, extended to 0
        when this test does not reject at ``alpha``: it excludes 0 exactly when
        ``p_value < alpha``. Only :meth:`at` is printed; this is what its coverage is
        measured on (``benchmarks/paired_coverage.py``)."""
        if self.owners < 2 or self.draws.size == 0:
            return math.nan, math.nan
        lo, hi = order_interval(self.draws, interval_tail(1 - alpha, self.owners))
        if math.isnan(lo) or self.p_value < alpha:
            return lo, hi
        return min(lo, 0.0), max(hi, 0.0)

    def mde(self, alpha: float, power: float) -> float:
        """The minimum detectable effect at level ``alpha`` (see :func:`min_detectable_effect`)."""
        se = self.planning_se
        return float(min_detectable_effect([se], self.owners, alpha=alpha, power=power)[0])


def _sign_flip_p(
    base: Estimator, cand: Estimator, keep: BoolArray, observed: float, options: StatOptions
) -> float:
    """Two-sided p-value of the observed delta under random swaps within owners."""
    cols_a, cols_b = base.columns[keep], cand.columns[keep]
    masks, exact = swap_masks(len(cols_a), options.resamples, options.seed)
    shift = masks @ (cols_b - cols_a)
    total_a, total_b = cols_a.sum(axis=0), cols_b.sum(axis=0)
    permuted = cand.statistic(total_b - shift) - base.statistic(total_a + shift)
    # Ties with the observed value count as extreme; the tolerance absorbs rounding.
    threshold = abs(observed) * (1 - 1e-9) - 1e-12
    with np.errstate(invalid="ignore"):
        extreme = float((np.abs(permuted) >= threshold).sum())
    count = float(len(masks))
    # A random sample includes the observed arrangement by convention (Phipson & Smyth 2010).
    p = extreme / count if exact else (extreme + 1) / (count + 1)
    return min(p, 1.0)


def _exact_planning_se(cols_a: FloatArray, cols_b: FloatArray, level: float) -> float:
    """A standard error to plan on when no owner differs from any other on either side (every
    owner at 0 parse failures): each side's from the width of its clustered exact interval
    (normal-equivalent: width / (2 z)), combined as for two independent configurations."""
    z = float(special.ndtri(1 - (1 - level) / 2))
    spreads = []
    for cols in (cols_a, cols_b):
        lo, hi = clustered_exact(cols[:, 0], cols[:, 1], level)
        spreads.append((hi - lo) / (2 * z))
    return math.hypot(*spreads)


def paired(base: Estimator, cand: Estimator, options: StatOptions | None = None) -> Paired:
    """Compare one statistic of two configurations on the same owners (rows aligned)."""
    options = options or StatOptions()
    if base.columns.shape != cand.columns.shape:
        raise StatsError("baseline and candidate need columns of the same (owners, p) shape")
    keep = base.mask() | cand.mask()
    n = int(keep.sum())
    delta = cand.value() - base.value()
    cols_a, cols_b = base.columns[keep], cand.columns[keep]
    with np.errstate(invalid="ignore"):
        changed = bool((cols_a != cols_b).any()) or bool(np.isnan(cols_a + cols_b).any())
    nan = math.nan
    rate = is_rate(base, keep) and is_rate(cand, keep)
    method = paired_method(owners=n, values=(base.value(), cand.value()), rate=rate)
    if n < 2 or options.resamples == 0 or math.isnan(delta):
        return Paired(n, delta, nan, nan, nan, changed, np.empty(0), method=method)
    weights = bootstrap_weights(n, options.resamples, options.seed)
    side_a, side_b = base.statistic(weights @ cols_a), cand.statistic(weights @ cols_b)
    draws = side_b - side_a
    se = spread(draws)
    planning = se if se > 0 else math.hypot(spread(side_a), spread(side_b))
    if not planning > 0 and base.pooled and cand.pooled:
        planning = _exact_planning_se(cols_a, cols_b, options.level)
    # Degenerate: the counts differ, but the statistic never does (precision 1.0 on both sides
    # with more facts stored): no test either.
    changed = changed and not (delta == 0 and bool((draws == 0).all()))
    p_perm = _sign_flip_p(base, cand, keep, delta, options)
    p_boot = bootstrap_p(draws, n)
    return Paired(n, delta, se, p_perm, p_boot, changed, draws, planning, method)


# ---------------------------------------------------------------------- families


def holm(p_values: npt.ArrayLike) -> FloatArray:
    """Holm-adjusted p-values (NaN entries stay NaN and do not count as tests).

    Reject the hypotheses whose adjusted p-value is below alpha: this controls the chance
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


def holm_steps(p_values: npt.ArrayLike, alpha: float) -> tuple[BoolArray, FloatArray]:
    """Holm's step-down: which tests are rejected, and the level each one's interval takes.

    Sorted by p-value (smallest first, ties in the given order), the ``k``-th test (0-based) is
    rejected when it and every test before it has ``p < alpha / (m - k)``. A rejected test's
    level is ``alpha / (m - k)``; every other test takes the level of the first step that
    failed, at which its interval includes 0. NaN entries are not tests (level NaN).
    """
    p = np.asarray(p_values, dtype=float).ravel()
    rejected = np.zeros(p.shape, dtype=bool)
    levels = np.full(p.shape, math.nan)
    valid = np.flatnonzero(~np.isnan(p))
    order = valid[np.argsort(p[valid], kind="stable")]
    m = order.size
    failed_at: float | None = None
    for k, index in enumerate(order):
        step = alpha / (m - k)
        if failed_at is None and p[index] < step:
            rejected[index] = True
            levels[index] = step
            continue
        if failed_at is None:
            failed_at = step
        levels[index] = failed_at
    return rejected, levels


_POWER_SHORTFALL = 0.6
"""The MDE is computed for the power ``1 - 0.6 (1 - power)`` (88% for 80%): a verdict needs
two tests to reject, and owners' spreads are estimated with heavier tails than a normal
sample's, which together cost several points of power against the Student-t formula (the
formula alone gave 77% with 14 owners). With this margin the procedure detects an effect of the
stated size in 82% of simulated pairs with 14 owners and 86% with 40, each lane's counts drawn
apart around each owner's propensity (``tests/test_stats.py``)."""


def min_detectable_effect(
    se: npt.ArrayLike, owners: int, *, alpha: float = 0.05, power: float = 0.80
) -> FloatArray:
    """Smallest true delta the paired procedure at ``alpha`` detects with ``power``.

    ``ncp * se * sqrt(n / (n - 1))``: ``ncp`` is the noncentrality at which a two-sided
    Student-t test on ``n - 1`` degrees of freedom at ``alpha`` reaches the power (exact, not the
    ``t[1 - alpha/2] + t[power]`` approximation), taken with the margin of
    :data:`_POWER_SHORTFALL`; ``se`` is the bootstrap standard error of the delta and ``n`` the
    owners (the square root undoes the bootstrap's ``(n - 1) / n`` shrinkage of the variance).
    Infinite when the sign-flip test cannot reach ``alpha`` with this many owners at all (its
    smallest p-value is ``2 / 2**n``); NaN when there is no spread to estimate from.
    """
    se_v = np.asarray(se, dtype=float)
    # The sign-flip test's smallest p-value 2 / 2**n, compared in logs: 2.0**n overflows a
    # float beyond about a thousand owners (owners_to_detect asks about millions).
    if owners < 2 or (1 - owners) * math.log(2.0) >= math.log(alpha):
        return np.full(se_v.shape, math.inf)
    df = owners - 1
    critical = t_quantile(1 - alpha / 2, df)
    nominal = 1 - _POWER_SHORTFALL * (1 - power)
    noncentrality = float(special.nctdtrinc(df, 1 - nominal, critical))
    factor = noncentrality * math.sqrt(owners / df)
    with np.errstate(invalid="ignore"):
        return np.where(se_v > 0, factor * se_v, math.nan)


def min_test_owners(alpha: float) -> int:
    """The fewest owners with which the paired procedure can reject at ``alpha`` at all: its
    sign-flip test's smallest p-value, ``2 / 2**n``, must be below ``alpha`` (6 at 0.05)."""
    owners = 2
    while 2.0 / 2.0**owners >= alpha:
        owners += 1
    return owners


_MAX_OWNERS = 10**7
"""Beyond this many owners :func:`owners_to_detect` gives up (``None``)."""


def owners_to_detect(
    effect: float, mde: float, owners: int, *, alpha: float = 0.05, power: float = 0.80
) -> int | None:
    """The fewest owners at which :func:`min_detectable_effect` reaches ``effect``, for owners
    like these: ``mde`` is the MDE with ``owners`` owners at ``alpha``, and the delta's standard
    error is taken to shrink as ``1 / sqrt(n)``. ``owners`` itself when ``mde`` is already
    small enough; ``None`` when ``mde`` is not a finite positive number (no spread to plan
    from, or too few owners for any test) or more than ten million owners would be needed."""
    if not (math.isfinite(mde) and mde > 0 and effect > 0):
        return None
    if mde <= effect:
        return owners
    se = mde / float(min_detectable_effect([1.0], owners, alpha=alpha, power=power)[0])

    def detects(n: int) -> bool:
        scaled = se * math.sqrt(owners / n)
        return float(min_detectable_effect([scaled], n, alpha=alpha, power=power)[0]) <= effect

    low, high = owners, owners * 2
    while not detects(high):
        if high >= _MAX_OWNERS:
            return None
        low, high = high, min(high * 2, _MAX_OWNERS)
    while high - low > 1:  # detects(high) holds, detects(low) does not
        middle = (low + high) // 2
        low, high = (low, middle) if detects(middle) else (middle, high)
    return high


# ---------------------------------------------------------------------- rate matrices


@dataclass(frozen=True)
class PairedTest:
    """Per metric: candidate minus baseline on shared owners, with interval, p-value and MDE
    at the unadjusted levels of the options (a family of one)."""

    owners: int
    delta: FloatArray
    lo: FloatArray
    hi: FloatArray
    se: FloatArray
    p_value: FloatArray
    mde: FloatArray
    tests: tuple[Paired, ...] = ()


def paired_ratio_test(
    baseline: tuple[npt.ArrayLike, npt.ArrayLike],
    candidate: tuple[npt.ArrayLike, npt.ArrayLike],
    *,
    empty: npt.ArrayLike | float = math.nan,
    options: StatOptions | None = None,
) -> PairedTest:
    """Compare two configurations' rates on the same owners (rows aligned by owner).

    Each metric is a family of one: its interval is at ``options.level``, its verdict and
    MDE at ``options.alpha`` (use :func:`holm_steps` and :meth:`Paired.at` for a family).
    """
    options = options or StatOptions()
    num_a, den_a = as_matrix(baseline[0]), as_matrix(baseline[1])
    num_b, den_b = as_matrix(candidate[0]), as_matrix(candidate[1])
    if not num_a.shape == den_a.shape == num_b.shape == den_b.shape:
        raise StatsError("baseline and candidate need arrays of the same (owners, metrics) shape")
    empty_v = empty_vector(empty, num_a.shape[1])
    tests = tuple(
        paired(
            ratio_estimator(num_a[:, j], den_a[:, j], float(empty_v[j])),
            ratio_estimator(num_b[:, j], den_b[:, j], float(empty_v[j])),
            options,
        )
        for j in range(num_a.shape[1])
    )
    bounds = [t.at(1 - options.level) for t in tests]
    return PairedTest(
        owners=num_a.shape[0],
        delta=np.array([t.delta for t in tests]),
        lo=np.array([b[0] for b in bounds]),
        hi=np.array([b[1] for b in bounds]),
        se=np.array([t.se for t in tests]),
        p_value=np.array([t.p_value for t in tests]),
        mde=np.array([t.mde(options.alpha, options.power) for t in tests]),
        tests=tests,
    )

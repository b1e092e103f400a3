"""Intervals and paired tests with owners as the unit of independence.

An owner's sessions depend on each other (the memory carries over from one to the next), so
owners are what gets resampled, never sessions or calls. Every metric with an interval is a
statistic of *sums over owners* of per-owner columns (an :class:`Estimator`): a rate is the
ratio of two sums (micro-averaged), a macro rate the sum of per-owner rates over the number of
owners that have one, the restricted mean survival time a function of per-time event and
at-risk sums (:mod:`memlab.scoring.inference.survival`). Owners that cannot change a metric (no gold
facts for recall, no stored facts for precision) are left out of its ``n``.

- :func:`bootstrap`: the expanded percentile interval (Hesterberg 2015) of a statistic, owners
  resampled with replacement (the sums of a resample are ``weights @ columns``).
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

Repeated samples of one owner (the same lane replayed several times) are averaged within the
owner before anything here sees them: see :func:`memlab.scoring.metrics.owner_counts`.
The simulations in ``tests/test_stats.py`` check the false-positive rate, the coverage and the
power of these procedures.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import numpy.typing as npt
from scipy import special

from memlab.core.base.machine import memory_budget
from memlab.scoring.inference.coverage import clustered_exact, interval_method, paired_method
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
    "Estimator",
    "Interval",
    "Intervals",
    "Paired",
    "PairedTest",
    "StatOptions",
    "StatsError",
    "bootstrap",
    "bootstrap_ratios",
    "holm",
    "holm_steps",
    "min_detectable_effect",
    "min_test_owners",
    "owners_to_detect",
    "paired",
    "paired_ratio_test",
    "ratio",
    "ratio_estimator",
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


def _bootstrap_weights(owners: int, resamples: int, seed: int) -> FloatArray:
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


def _swap_masks(owners: int, resamples: int, seed: int) -> tuple[FloatArray, bool]:
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


def _t_quantile(p: float, df: int) -> float:
    """Student-t quantile with ``df`` degrees of freedom."""
    return float(special.stdtrit(df, p))


def _tail(level: float, owners: int) -> float:
    """Lower tail probability of the expanded percentile interval (Hesterberg 2015).

    Plain bootstrap percentiles are too narrow with few owners (about 92% coverage for a 95%
    interval with 14 owners): the bootstrap spread lacks the ``n / (n - 1)`` factor and the
    normal quantile should be Student's. Taking percentiles at
    ``Phi(-sqrt(n / (n - 1)) * t[n - 1])`` instead of ``(1 - level) / 2`` corrects both.
    """
    t = _t_quantile(1 - (1 - level) / 2, owners - 1)
    return float(special.ndtr(-math.sqrt(owners / (owners - 1)) * t))


def _alpha_of_tail(share: float, owners: int) -> float:
    """The ``a`` whose expanded interval has lower tail ``share``: the inverse of ``_tail``."""
    if share <= 0:
        return 0.0
    if share >= 0.5:
        return 1.0
    t = -float(special.ndtri(share)) / math.sqrt(owners / (owners - 1))
    return float(min(1.0, 2.0 * (1.0 - special.stdtr(owners - 1, t))))


def _finite(draws: FloatArray) -> FloatArray:
    return draws[~np.isnan(draws)]


def _order_interval(draws: FloatArray, tail: float) -> tuple[float, float]:
    """The interval between the ``j``-th smallest and ``j``-th largest draw,
    ``j = ceil(tail * B) - 1``: it excludes 0 exactly when fewer than ``tail * B`` draws lie
    on 0 or beyond it (what :func:`_bootstrap_p` inverts)."""
    finite = np.sort(_finite(draws))
    if finite.size == 0:
        return math.nan, math.nan
    j = max(math.ceil(tail * finite.size) - 1, 0)
    j = min(j, (finite.size - 1) // 2)
    return float(finite[j]), float(finite[finite.size - 1 - j])


def _bootstrap_p(draws: FloatArray, owners: int) -> float:
    """The smallest ``a`` whose expanded interval at level ``1 - a`` excludes 0."""
    finite = _finite(draws)
    if finite.size == 0:
        return math.nan
    share = min(int((finite <= 0).sum()), int((finite >= 0).sum())) / finite.size
    return _alpha_of_tail(share, owners)


def _spread(draws: FloatArray) -> float:
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
    rate = _is_rate(estimator, keep)
    method = interval_method(ratio=estimator.pooled, owners=n, estimate=estimate, bounded=rate)
    if n < 2 or options.resamples == 0:
        return Interval(estimate, math.nan, math.nan, math.nan, n, method)
    weights = _bootstrap_weights(n, options.resamples, options.seed)
    draws = estimator.statistic(weights @ estimator.columns[keep])
    if method == "clustered_exact":
        columns = estimator.columns[keep]
        lo, hi = clustered_exact(columns[:, 0], columns[:, 1], options.level)
    elif method.startswith("bootstrap"):
        lo, hi = _order_interval(draws, _tail(options.level, n))
    else:
        lo, hi = math.nan, math.nan
    return Interval(estimate, lo, hi, _spread(draws), n, method)


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
        lo, hi = _order_interval(self.draws, _tail(1 - alpha, self.owners))
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
    masks, exact = _swap_masks(len(cols_a), options.resamples, options.seed)
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
    rate = _is_rate(base, keep) and _is_rate(cand, keep)
    method = paired_method(owners=n, values=(base.value(), cand.value()), rate=rate)
    if n < 2 or options.resamples == 0 or math.isnan(delta):
        return Paired(n, delta, nan, nan, nan, changed, np.empty(0), method=method)
    weights = _bootstrap_weights(n, options.resamples, options.seed)
    side_a, side_b = base.statistic(weights @ cols_a), cand.statistic(weights @ cols_b)
    draws = side_b - side_a
    se = _spread(draws)
    planning = se if se > 0 else math.hypot(_spread(side_a), _spread(side_b))
    if not planning > 0 and base.pooled and cand.pooled:
        planning = _exact_planning_se(cols_a, cols_b, options.level)
    # Degenerate: the counts differ, but the statistic never does (precision 1.0 on both sides
    # with more facts stored): no test either.
    changed = changed and not (delta == 0 and bool((draws == 0).all()))
    p_perm = _sign_flip_p(base, cand, keep, delta, options)
    p_boot = _bootstrap_p(draws, n)
    return Paired(n, delta, se, p_perm, p_boot, changed, draws, planning, method)


def _is_rate(estimator: Estimator, keep: BoolArray) -> bool:
    """A ratio of sums that is a rate: no kept owner's numerator outside 0 to its denominator
    (a size ratio or tokens per owner is not one)."""
    kept = estimator.columns[keep]
    return estimator.pooled and bool(
        kept.shape[1] >= 2 and np.all((kept[:, 0] >= 0) & (kept[:, 0] <= kept[:, 1]))
    )


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
    critical = _t_quantile(1 - alpha / 2, df)
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
class Intervals:
    """Per metric: the rate over all owners, its interval and the bootstrap standard error."""

    estimate: FloatArray
    lo: FloatArray
    hi: FloatArray
    se: FloatArray


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


def _as_matrix(values: npt.ArrayLike) -> FloatArray:
    array = np.asarray(values, dtype=float)
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2:
        raise StatsError(f"expected an (owners, metrics) array, got shape {array.shape}")
    return array


def _empty_vector(empty: npt.ArrayLike | float, k: int) -> FloatArray:
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
    num_m, den_m = _as_matrix(num), _as_matrix(den)
    empty_v = _empty_vector(empty, num_m.shape[1])
    found = [
        bootstrap(ratio_estimator(num_m[:, j], den_m[:, j], float(empty_v[j])), options)
        for j in range(num_m.shape[1])
    ]
    columns = ("estimate", "lo", "hi", "se")
    return Intervals(*(np.array([getattr(f, name) for f in found]) for name in columns))


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
    num_a, den_a = _as_matrix(baseline[0]), _as_matrix(baseline[1])
    num_b, den_b = _as_matrix(candidate[0]), _as_matrix(candidate[1])
    if not num_a.shape == den_a.shape == num_b.shape == den_b.shape:
        raise StatsError("baseline and candidate need arrays of the same (owners, metrics) shape")
    empty_v = _empty_vector(empty, num_a.shape[1])
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

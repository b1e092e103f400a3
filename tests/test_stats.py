"""Intervals and paired tests, validated by simulation (numpy, a few seconds).

The simulated owners mimic memlab's rates: each owner has a few labeled facts or replies
(a binomial count out of a small denominator) and an owner-specific propensity, so owners
differ more than binomial noise alone would make them.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from memlab.scoring.inference.paired_tests import holm, min_detectable_effect, paired_ratio_test
from memlab.scoring.inference.stats import StatOptions, StatsError, bootstrap_ratios, t_quantile
from memlab.scoring.metrics import owner_counts, summarize

ALPHA = 0.05


def simulate_pair(
    rng: np.random.Generator, owners: int, shift: float = 0.0
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Two configurations on the same owners; the candidate's propensity is ``shift`` higher.

    Denominators differ between configurations (like precision: stored facts per owner).
    """
    propensity = rng.beta(2, 3, size=owners)
    den_a = rng.integers(2, 20, size=owners)
    den_b = rng.integers(2, 20, size=owners)
    num_a = rng.binomial(den_a, propensity)
    num_b = rng.binomial(den_b, np.clip(propensity + shift, 0, 1))
    return (num_a, den_a), (num_b, den_b)


def rejection_rate(owners: int, shift: float, trials: int, seed: int) -> tuple[float, float]:
    """Share of paired tests significant at ALPHA, and the mean minimum detectable effect."""
    rng = np.random.default_rng(seed)
    rejected, mdes = 0, []
    for trial in range(trials):
        baseline, candidate = simulate_pair(rng, owners, shift)
        options = StatOptions(resamples=499, seed=seed * 100_000 + trial)
        result = paired_ratio_test(baseline, candidate, options=options)
        rejected += bool(result.p_value[0] <= ALPHA)
        mdes.append(result.mde[0])
    return rejected / trials, float(np.mean(mdes))


@pytest.mark.simulation
def test_false_positive_rate_without_a_true_difference() -> None:
    rate, _ = rejection_rate(owners=20, shift=0.0, trials=1000, seed=1)
    assert 0.03 <= rate <= 0.07, rate


@pytest.mark.simulation
def test_false_positive_rate_with_shared_denominators_never_exceeds_alpha() -> None:
    # Recall-like: both configurations scored on the same gold facts. Per-owner deltas are
    # small integers, the permutation distribution has ties, and the test is conservative.
    rng = np.random.default_rng(2)
    rejected = 0
    for trial in range(1000):
        den = rng.integers(3, 15, size=14)
        propensity = rng.beta(2, 3, size=14)
        a, b = rng.binomial(den, propensity), rng.binomial(den, propensity)
        result = paired_ratio_test((a, den), (b, den), options=StatOptions(499, seed=trial))
        rejected += bool(result.p_value[0] <= ALPHA)
    assert rejected / 1000 <= 0.07


def coverage(owners: int, trials: int, seed: int, per_owner: int = 10, p: float = 0.3) -> float:
    """Share of 95% intervals containing the true rate ``p`` (binomial counts per owner)."""
    rng = np.random.default_rng(seed)
    hits = 0
    for trial in range(trials):
        num = rng.binomial(per_owner, p, size=owners)
        den = np.full(owners, per_owner)
        found = bootstrap_ratios(num, den, options=StatOptions(1000, seed=trial))
        hits += bool(found.lo[0] <= p <= found.hi[0])
    return hits / trials


@pytest.mark.simulation
@pytest.mark.parametrize("owners", [14, 30])
def test_bootstrap_interval_coverage_on_a_binomial_setup(owners: int) -> None:
    assert 0.93 <= coverage(owners, trials=1000, seed=owners) <= 0.97


@pytest.mark.simulation
def test_paired_delta_interval_covers_zero_without_a_difference() -> None:
    rng = np.random.default_rng(3)
    hits = 0
    for trial in range(1000):
        baseline, candidate = simulate_pair(rng, 20)
        result = paired_ratio_test(baseline, candidate, options=StatOptions(1000, seed=trial))
        # The true delta of the two rates is not exactly 0 (denominators differ), but the
        # propensities are equal: the interval should cover 0 about 95% of the time.
        hits += bool(result.lo[0] <= 0 <= result.hi[0])
    assert 0.93 <= hits / 1000 <= 0.97


@pytest.mark.simulation
def test_power_rises_with_the_number_of_owners() -> None:
    powers = [rejection_rate(n, shift=0.1, trials=300, seed=10 + n)[0] for n in (8, 16, 32, 64)]
    assert powers == sorted(powers) and len(set(powers)) == 4, powers
    assert powers[0] < 0.3 and powers[-1] > 0.85, powers


@pytest.mark.simulation
@pytest.mark.parametrize("owners", [14, 40])
def test_the_stated_mde_is_detected_at_least_80_percent_of_the_time(owners: int) -> None:
    # The MDE is stated for the spread observed; find the effect whose own spread gives an MDE
    # of its size (two rounds from 0.1), then replay that effect: the verdict must come out
    # significant in at least 80% of the pairs.
    shift = 0.1
    for step in range(2):
        _, shift = rejection_rate(owners, shift, trials=200, seed=40 + step)
    power, _ = rejection_rate(owners, shift, trials=800, seed=9)
    print(f"{owners} owners: power {power:.3f} at the stated MDE {shift:.3f}")
    assert power >= 0.80, (shift, power)


def test_exact_sign_flip_with_few_owners() -> None:
    # 5 owners, every one better: the all-better arrangement and its mirror are the two
    # most extreme of 2**5 = 32 swaps, so p = 2/32 exactly (and no alpha-0.05 rejection).
    base = (np.zeros(5), np.full(5, 4.0))
    better = (np.array([1.0, 2, 3, 4, 2]), np.full(5, 4.0))
    result = paired_ratio_test(base, better, options=StatOptions(resamples=2000))
    assert result.p_value[0] == 2 / 32
    assert math.isinf(result.mde[0])  # 5 owners can never reach p <= 0.05
    assert result.delta[0] == pytest.approx(12 / 20)


def test_identical_configurations_give_p_one_and_a_zero_interval() -> None:
    rng = np.random.default_rng(6)
    num, den = rng.integers(0, 5, size=12), np.full(12, 5)
    result = paired_ratio_test((num, den), (num, den))
    assert result.delta[0] == 0 and result.p_value[0] == 1.0
    assert result.lo[0] == 0 == result.hi[0]
    # The paired spread is 0; the MDE falls back to two independent configurations'.
    assert 0 < result.mde[0] < 1


def test_results_are_fixed_by_the_seed_and_metrics_are_independent_columns() -> None:
    rng = np.random.default_rng(7)
    (a, da), (b, db) = simulate_pair(rng, 15, shift=0.1)
    one = paired_ratio_test((a, da), (b, db), options=StatOptions(seed=9))
    again = paired_ratio_test((a, da), (b, db), options=StatOptions(seed=9))
    for name in ("delta", "lo", "hi", "se", "p_value", "mde"):
        assert np.array_equal(getattr(one, name), getattr(again, name)), name
    stacked = paired_ratio_test(
        (np.c_[a, a], np.c_[da, da]), (np.c_[b, a], np.c_[db, da]), options=StatOptions(seed=9)
    )
    assert stacked.p_value[0] == one.p_value[0] and stacked.lo[0] == one.lo[0]
    assert stacked.delta[1] == 0 and stacked.p_value[1] == 1.0


def test_empty_denominators_and_single_owner() -> None:
    found = bootstrap_ratios([[0, 1]], [[0, 2]], empty=[0.0, math.nan])
    assert found.estimate.tolist() == [0.0, 0.5]
    assert math.isnan(found.lo[0]) and math.isnan(found.hi[1])  # one owner: no interval
    nan = bootstrap_ratios([1.0, math.nan, 2.0], [2, 2, 2])
    assert math.isnan(nan.estimate[0]) and math.isnan(nan.lo[0])
    off = bootstrap_ratios([1, 2, 3], [3, 3, 3], options=StatOptions(resamples=0))
    assert off.estimate[0] == pytest.approx(6 / 9) and math.isnan(off.lo[0])


def test_holm_adjustment() -> None:
    adjusted = holm([0.01, 0.04, math.nan, 0.03, 0.005])
    assert adjusted[2] != adjusted[2]  # NaN stays NaN and is not counted as a test
    assert np.allclose(adjusted[[0, 1, 3, 4]], [0.03, 0.06, 0.06, 0.02])
    assert holm([0.9, 0.8]).tolist() == [1.0, 1.0]  # 0.8 * 2 tests, capped at 1
    assert holm([]).size == 0


@pytest.mark.parametrize(
    ("p", "df", "expected"),
    [
        (0.975, 1, 12.706),
        (0.975, 2, 4.303),
        (0.975, 3, 3.182),
        (0.975, 5, 2.571),
        (0.975, 13, 2.160),
        (0.975, 30, 2.042),
        (0.8, 13, 0.870),
        (0.8, 3, 0.978),
    ],
)
def test_student_t_quantiles_match_tables(p: float, df: int, expected: float) -> None:
    assert t_quantile(p, df) == pytest.approx(expected, abs=0.005)


def test_mde_grows_as_owners_shrink_and_is_infinite_below_six() -> None:
    assert math.isinf(min_detectable_effect([0.05], 5)[0])
    assert min_detectable_effect([0.05], 6)[0] > min_detectable_effect([0.05], 40)[0]
    assert math.isnan(min_detectable_effect([0.0], 20)[0])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"resamples": -1},
        {"resamples": 1.5},
        {"resamples": True},
        {"level": 1.0},
        {"alpha": 0},
        {"power": float("nan")},
    ],
)
def test_invalid_options_are_rejected(kwargs: dict[str, object]) -> None:
    with pytest.raises(StatsError):
        StatOptions(**kwargs)  # type: ignore[arg-type]


def _rows(samples: dict[tuple[str, int], tuple[int, int]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One-session rows per (owner, sample) with ``(gold_covered, gold_active)``."""
    sessions = pd.DataFrame(
        [
            {
                "lane_id": "L",
                "user_id": user,
                "sample": sample,
                "session_index": 0,
                "facts": covered,
                "gold_active": active,
                "gold_covered": covered,
                "stored_precise": covered,
                "retracted_held": 0,
                "gold_retracted": 0,
                "forbidden_stored": 0,
                "dup_exact": 0,
                "dup_normalized": 0,
                "dup_near": 0,
                "agent_runs": 1,
                "added": covered,
                "removed": 0,
                "evicted": 0,
                "skipped_below_threshold": 0,
                "skipped_duplicate": 0,
            }
            for (user, sample), (covered, active) in samples.items()
        ]
    )
    calls = sessions[["lane_id", "user_id", "sample"]].assign(
        reply="{}",
        parse_ok=True,
        error_stage=None,
        model="scripted",
        prompt_tokens=10,
        completion_tokens=5,
        cached=False,
    )
    return calls, sessions


def test_repeated_samples_are_averaged_within_each_owner() -> None:
    # ann is replayed twice (1/2 and 2/2 covered), bob once (0/2): ann's samples average to
    # 1.5/2, and each owner weighs the same: recall = (1.5 + 0) / (2 + 2).
    calls, sessions = _rows({("ann", 0): (1, 2), ("ann", 1): (2, 2), ("bob", 0): (0, 2)})
    counts = owner_counts(calls, sessions, nested="sample")
    assert counts.loc[("L", "ann"), "gold_covered"] == 1.5
    assert counts.loc[("L", "ann"), "llm_calls"] == 1  # per sample, averaged
    assert len(counts) == 2  # clusters are owners, not (owner, sample)
    summary = summarize(calls, sessions, nested="sample").iloc[0]
    assert summary["recall"] == pytest.approx(0.375)
    assert summary["owners"] == 2
    assert summary["llm_calls"] == 2
    flat = summarize(calls, sessions).iloc[0]  # without nesting: samples pooled as is
    assert flat["recall"] == pytest.approx(3 / 6)


def test_owner_counts_needs_the_named_columns() -> None:
    calls, sessions = _rows({("ann", 0): (1, 2)})
    with pytest.raises(ValueError, match="'sample'"):
        owner_counts(calls, sessions.drop(columns="sample"), nested="sample")


def test_call_counts_read_each_row_by_its_own_value() -> None:
    """Each call is counted by its own marks, also where rows repeat equal-looking values of
    other types (``1`` is a dict key equal to ``True``, but only ``True`` marks a session
    end's fold) and where a model or a skip reason is missing (NaN)."""
    owners = {(f"u{i}", 0): (1, 1) for i in range(6)}
    calls, sessions = _rows(owners)
    calls = calls.assign(
        session_end=[True, 1, True, 1, None, math.nan],
        skipped=[None, "nothing to send", math.nan, None, "nothing to send", None],
        model=["scripted", None, math.nan, "scripted", "scripted", None],
    )
    counts = owner_counts(calls, sessions)
    # Queued: a primary record (no "call" column: an update) whose session_end is not True.
    assert counts["queued_updates"].tolist() == [0, 1, 0, 1, 1, 1]
    assert counts["llm_calls"].tolist() == [1, 0, 1, 1, 0, 1]  # a skip reason asked nothing
    assert counts["cost_usd"].tolist() == [0.0] * 6

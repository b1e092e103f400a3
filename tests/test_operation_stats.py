"""The intervals of the operation metrics, validated by simulation (numpy, a few seconds).

F1 is a ratio of per-owner sums (2 correct / (2 correct + false + missed)); the stale-survival
mean is one too (stale sessions / stale facts). Both get the same bootstrap over owners as
every rate: here is how often their 95% intervals contain the true value.
"""

from __future__ import annotations

import numpy as np
import pytest

from memlab.scoring.stats import StatOptions, bootstrap_ratios


def f1_coverage(
    owners: int, seed: int, trials: int = 1000, r: float = 0.6, q: float = 0.3
) -> float:
    """Owners with 2-9 expected operations (each done with probability ``r``) and 0-5 other
    operations (each false with probability ``q``)."""
    rng = np.random.default_rng(seed)
    expected, other = 5.5, 2.5  # the means of the two uniform counts
    truth = 2 * r * expected / (2 * r * expected + q * other + (1 - r) * expected)
    hits = 0
    for trial in range(trials):
        due, extra = rng.integers(2, 10, size=owners), rng.integers(0, 6, size=owners)
        correct = rng.binomial(due, r)
        false = rng.binomial(extra, q)
        found = bootstrap_ratios(
            2 * correct,
            2 * correct + false + (due - correct),
            options=StatOptions(1000, seed=trial),
        )
        hits += bool(found.lo[0] <= truth <= found.hi[0])
    return hits / trials


def stale_coverage(owners: int, seed: int, trials: int = 1000, p: float = 0.4) -> float:
    """Owners with 0-3 stale facts, each surviving a geometric number of sessions (removed
    with probability ``p`` at each session)."""
    rng = np.random.default_rng(seed)
    truth = (1 - p) / p
    hits = 0
    for trial in range(trials):
        facts = rng.integers(0, 4, size=owners)
        sessions = np.array([rng.geometric(p, size=k).sum() - k for k in facts])
        found = bootstrap_ratios(sessions, facts, options=StatOptions(1000, seed=trial))
        hits += bool(found.lo[0] <= truth <= found.hi[0])
    return hits / trials


@pytest.mark.parametrize("owners", [14, 30])
def test_f1_interval_coverage(owners: int) -> None:
    assert 0.93 <= f1_coverage(owners, seed=owners) <= 0.97


def test_stale_mean_interval_coverage() -> None:
    # A skewed count with few facts per owner: the percentile interval runs a little narrow
    # (about 92% with 14 owners, 94% with 120); docs/operations.md says so.
    assert 0.90 <= stale_coverage(14, seed=14) <= 0.96

"""The intervals of the operation metrics, validated by simulation (numpy, a few seconds).

F1 is a ratio of per-owner sums (2 correct / (2 correct + false + missed)) and gets the same
bootstrap over owners as every rate: here is how often its 95% interval contains the true
value. (Stale survival, a censored time, has its own simulation: ``tests/test_survival.py``.)
"""

from __future__ import annotations

import numpy as np
import pytest

from memlab.scoring.inference.stats import StatOptions, bootstrap_ratios


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


@pytest.mark.simulation
@pytest.mark.parametrize("owners", [14, 30])
def test_f1_interval_coverage(owners: int) -> None:
    assert 0.93 <= f1_coverage(owners, seed=owners) <= 0.97

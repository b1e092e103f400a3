"""Stale-fact survival: Kaplan-Meier counts against scipy, and the restricted mean's interval
validated by simulation with a censored truth (numpy, a few seconds).

The simulated owners are what memlab measures: each owner retracts a few facts in sessions
spread over its history; a model removes a retracted fact at each session end with an
owner-specific hazard; an owner's history ends after a fixed number of sessions, so facts
retracted late are censored. The truth is the restricted mean of the mixture survival,
computed in closed form from the hazard distribution (Beta), never from memlab code.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import betaln

from memlab.scoring.inference.estimators import estimator
from memlab.scoring.inference.stats import Estimator, StatOptions, bootstrap
from memlab.scoring.inference.survival import (
    Episode,
    episode_counts,
    kaplan_meier,
    rmst_from_counts,
    survival_from_counts,
)
from memlab.scoring.metric_specs import metric_spec

HORIZON = 3


def test_episode_counts_by_hand() -> None:
    episodes = [Episode(0, False), Episode(2, False), Episode(2, True), Episode(1, True)]
    removed, at_risk = episode_counts(episodes, HORIZON)
    assert removed == [1, 0, 1]
    # A removal at T is at risk while t <= T; a censored episode seen at c session ends while
    # t < c: (2, True) at 0 and 1, (1, True) at 0 only.
    assert at_risk == [4, 2, 1]
    curve = survival_from_counts([removed], [at_risk])[0]
    assert curve.tolist() == pytest.approx([3 / 4, 3 / 4, 0.0])
    assert rmst_from_counts([removed], [at_risk])[0] == pytest.approx(1.5)


def test_no_episode_is_undefined_and_no_removal_survives_the_horizon() -> None:
    assert math.isnan(rmst_from_counts([[0, 0, 0]], [[0, 0, 0]])[0])
    removed, at_risk = episode_counts([Episode(1, True)], HORIZON)
    assert rmst_from_counts([removed], [at_risk])[0] == HORIZON
    assert kaplan_meier([Episode(1, True)], HORIZON).tolist() == [1.0, 1.0, 1.0]


def test_counts_agree_with_scipy_kaplan_meier() -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        k = int(rng.integers(1, 25))
        episodes = [Episode(int(rng.integers(0, 5)), bool(rng.random() < 0.4)) for _ in range(k)]
        # A censored episode has been seen at one session end at least.
        episodes = [Episode(max(e.sessions, 1), True) if e.censored else e for e in episodes]
        removed, at_risk = episode_counts(episodes, 5)
        ours = survival_from_counts([removed], [at_risk])[0]
        np.testing.assert_allclose(ours, kaplan_meier(episodes, 5), atol=1e-12)


def _true_rmst(a: float, b: float, horizon: int) -> float:
    """sum_{t < horizon} E[(1 - h)^(t + 1)] for a hazard h ~ Beta(a, b)."""
    return sum(math.exp(betaln(a, b + t + 1) - betaln(a, b)) for t in range(horizon))


def _owner_counts(rng: np.random.Generator, owners: int, a: float, b: float) -> np.ndarray:
    """Per owner: removed_t and at_risk_t for t < HORIZON (shape owners x 2 HORIZON)."""
    rows = []
    for _ in range(owners):
        hazard = rng.beta(a, b)
        sessions = 5
        episodes = []
        for _fact in range(int(rng.integers(0, 4))):
            retracted_in = int(rng.integers(0, sessions))
            follow_up = sessions - retracted_in  # session ends left, the retracting one's too
            survived = int(rng.geometric(hazard)) - 1  # session ends held before the removal
            if survived >= follow_up:
                episodes.append(Episode(follow_up, True))
            else:
                episodes.append(Episode(survived, False))
        removed, at_risk = episode_counts(episodes, HORIZON)
        rows.append([*removed, *at_risk])
    return np.array(rows, dtype=float)


def _estimator(columns: np.ndarray) -> Estimator:
    """memlab's own estimator of ``stale_rmst`` over these per-owner counts."""
    spec = metric_spec("stale_rmst")
    assert spec.sources == (
        *(f"stale_removed_{t}" for t in range(HORIZON)),
        *(f"stale_at_risk_{t}" for t in range(HORIZON)),
    )
    return estimator(spec, pd.DataFrame(columns, columns=list(spec.sources)))


def rmst_coverage(owners: int, trials: int, seed: int, a: float = 2.0, b: float = 3.0) -> float:
    truth = _true_rmst(a, b, HORIZON)
    rng = np.random.default_rng(seed)
    hits = 0
    censored = 0.0
    for trial in range(trials):
        columns = _owner_counts(rng, owners, a, b)
        found = bootstrap(_estimator(columns), StatOptions(1000, seed=trial))
        hits += bool(found.lo <= truth <= found.hi)
        censored += 1 - columns[:, :HORIZON].sum() / max(columns[:, HORIZON].sum(), 1)
    assert censored / trials > 0.2  # a sentinel: the setup does censor a good share
    return hits / trials


@pytest.mark.simulation
def test_restricted_mean_interval_covers_the_censored_truth_at_30_owners() -> None:
    assert 0.93 <= rmst_coverage(30, trials=1000, seed=30) <= 0.97


@pytest.mark.simulation
def test_kaplan_meier_recovers_the_truth_on_many_owners() -> None:
    rng = np.random.default_rng(5)
    columns = _owner_counts(rng, 3000, 2.0, 3.0)
    estimate = _estimator(columns).value()
    assert estimate == pytest.approx(_true_rmst(2.0, 3.0, HORIZON), abs=0.04)


def test_an_episode_from_a_session_row() -> None:
    detail = {"gold": "g", "sessions": 2, "days": 3.5, "censored": True}
    assert Episode.from_detail(detail) == Episode(2, True)
    assert Episode.from_detail({"gold": "g"}) == Episode(0, False)


def test_nan_counts_give_nan_and_empty_times_stay_flat() -> None:
    assert np.isnan(rmst_from_counts([[1, math.nan, 0]], [[2, 1, 0]])[0])
    assert np.isnan(survival_from_counts([[0, 0]], [[math.nan, 0]])).all()
    # Nobody at risk at t = 1 and 2: the curve stays where t = 0 left it.
    curve = survival_from_counts([[1, 0, 0]], [[4, 0, 0]])[0]
    assert curve.tolist() == [0.75, 0.75, 0.75]
    # Rows are resamples: each is estimated on its own.
    both = rmst_from_counts([[1, 0, 0], [2, 0, 0]], [[4, 0, 0], [4, 0, 0]])
    assert both.tolist() == pytest.approx([2.25, 1.5])


def test_times_nobody_reaches_are_silent() -> None:
    """Most resamples have times with nobody at risk (0 / 0): thousands of them per interval
    must not each raise a numpy warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        curve = survival_from_counts([[1, 0, 0]] * 2000, [[4, 0, 0]] * 2000)
    assert curve.shape == (2000, HORIZON) and (curve == 0.75).all()


def test_kaplan_meier_edges() -> None:
    assert np.isnan(kaplan_meier([], HORIZON)).all()
    # Everyone removed at once: 0 from the first session end on.
    assert kaplan_meier([Episode(0, False)] * 3, HORIZON).tolist() == [0.0, 0.0, 0.0]
    # One removed at 1 of two at risk; the other censored after 2 session ends.
    curve = kaplan_meier([Episode(1, False), Episode(2, True)], HORIZON)
    assert curve.tolist() == pytest.approx([1.0, 0.5, 0.5])
    removed, at_risk = episode_counts([Episode(1, False), Episode(2, True)], HORIZON)
    assert (removed, at_risk) == ([0, 1, 0], [2, 2, 0])

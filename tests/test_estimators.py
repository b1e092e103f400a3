"""How a metric spec becomes a statistic of per-owner counts: micro and macro rates, the
restricted mean survival time, and loud NaN; every expected value worked out by hand."""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd
import pytest

from memlab.scoring.inference.estimators import estimator, missing_owners
from memlab.scoring.metric_model import MetricSpec
from memlab.scoring.metric_specs import metric_spec

RECALL = metric_spec("recall")  # gold_covered / gold_active, micro, empty NaN
MACRO = metric_spec("precision_macro")  # stored_precise / facts per owner, averaged
STALE = metric_spec("stale_rmst")  # Kaplan-Meier over 3 session ends


def _counts(rows: dict[str, list[float]], columns: tuple[str, ...]) -> pd.DataFrame:
    return pd.DataFrame.from_dict(rows, orient="index", columns=list(columns))


def test_a_micro_rate_is_the_ratio_of_sums_and_skips_owners_without_gold() -> None:
    counts = _counts({"a": [1, 4], "b": [2, 2], "c": [0, 0]}, RECALL.sources)
    found = estimator(RECALL, counts)
    assert found.value() == pytest.approx(3 / 6)
    # Owner c has no gold fact: it cannot move recall, so it is not counted in n.
    assert found.mask().tolist() == [True, True, False]
    # Owner a alone, then b alone.
    assert found.value(np.array([True, False, False])) == pytest.approx(1 / 4)
    assert found.value(np.array([False, True, False])) == pytest.approx(1.0)


def test_a_macro_rate_averages_each_owners_ratio() -> None:
    # Owner a keeps 1 of 2 facts right, b 1 of 4, c stores nothing (left out).
    counts = _counts({"a": [1, 2], "b": [1, 4], "c": [0, 0]}, MACRO.sources)
    found = estimator(MACRO, counts)
    assert found.value() == pytest.approx((1 / 2 + 1 / 4) / 2)  # micro would be 2 / 6
    assert found.mask().tolist() == [True, True, False]
    assert found.value(np.array([False, True, True])) == pytest.approx(1 / 4)


def test_a_macro_rate_over_owners_without_a_denominator_is_empty() -> None:
    counts = _counts({"a": [0, 0], "b": [0, 0]}, MACRO.sources)
    assert math.isnan(estimator(MACRO, counts).value())
    empty_zero = MetricSpec(
        "m", "m", "higher", "percent", ratio=("stored_precise", "facts"), average="macro",
        empty=0.0,
    )  # fmt: skip
    assert estimator(empty_zero, counts).value() == 0.0


@pytest.mark.parametrize("bad", [[math.nan, 2], [1, math.nan]])
def test_a_missing_count_makes_a_macro_rate_nan(bad: list[float]) -> None:
    counts = _counts({"a": [1, 2], "b": bad}, MACRO.sources)
    found = estimator(MACRO, counts)
    assert math.isnan(found.value())
    assert found.mask().tolist() == [True, True]  # the NaN owner stays in: never dropped


def test_an_empty_micro_rate_takes_the_specs_empty_value() -> None:
    counts = _counts({"a": [0, 0]}, ("dup_near", "facts"))
    assert estimator(metric_spec("duplicate_rate"), counts).value() == 0.0
    assert math.isnan(estimator(RECALL, _counts({"a": [0, 0]}, RECALL.sources)).value())


def test_the_restricted_mean_survival_of_summed_counts() -> None:
    # removed_0..2, at_risk_0..2. Owner a: 4 episodes at risk at 0, one removed at 0; owner b:
    # 2 at risk at 0 and 1, one removed at 1; owner c: no episode.
    counts = _counts(
        {"a": [1, 0, 0, 4, 3, 3], "b": [0, 1, 0, 2, 2, 1], "c": [0, 0, 0, 0, 0, 0]},
        STALE.sources,
    )
    found = estimator(STALE, counts)
    # Summed: removed (1, 1, 0), at risk (6, 5, 4): S = 5/6, 5/6 * 4/5, the same.
    s0 = 5 / 6
    s1 = s0 * (1 - 1 / 5)
    assert found.value() == pytest.approx(s0 + s1 + s1)
    assert found.mask().tolist() == [True, True, False]
    # Owner a alone: S = 3/4 throughout.
    assert found.value(np.array([True, False, False])) == pytest.approx(3 * 3 / 4)


def test_survival_relevance_reads_the_first_at_risk_count() -> None:
    # Owner a has an episode at t = 0 only (removed then); b has none at all.
    counts = _counts({"a": [1, 0, 0, 1, 0, 0], "b": [0, 0, 0, 0, 0, 0]}, STALE.sources)
    found = estimator(STALE, counts)
    assert found.mask().tolist() == [True, False]
    assert found.value() == 0.0
    # A NaN count keeps its owner in (and no other), and makes the value NaN.
    counts.loc["c"] = [0.0] * 6
    counts.loc["b", "stale_removed_2"] = math.nan
    found = estimator(STALE, counts)
    assert found.mask().tolist() == [True, True, False]
    assert math.isnan(found.value())


def test_missing_owners_are_named_in_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    owners = {f"o{i}": [1.0, 2.0] for i in range(8)}
    for name in ("o1", "o2", "o3", "o4", "o5", "o6"):
        owners[name] = [math.nan, 2.0]
    counts = _counts(owners, RECALL.sources)
    assert missing_owners(RECALL, counts) == ["o1", "o2", "o3", "o4", "o5", "o6"]
    with caplog.at_level(logging.WARNING, logger="memlab.scoring.inference.estimators"):
        assert math.isnan(estimator(RECALL, counts, where="run: lane").value())
    assert [r.getMessage() for r in caplog.records] == [
        "run: lane: recall: owners o1, o2, o3, o4, o5 ... have no value (NaN) for "
        "gold_covered/gold_active: the metric is NaN"
    ]


def test_five_missing_owners_are_all_named(caplog: pytest.LogCaptureFixture) -> None:
    owners = {f"o{i}": [math.nan if i < 5 else 1.0, 2.0] for i in range(7)}
    with caplog.at_level(logging.WARNING, logger="memlab.scoring.inference.estimators"):
        estimator(RECALL, _counts(owners, RECALL.sources))
    assert caplog.messages == [
        "recall: owners o0, o1, o2, o3, o4 have no value (NaN) for gold_covered/gold_active: "
        "the metric is NaN"
    ]


def test_a_missing_survival_count_is_logged_without_a_place(
    caplog: pytest.LogCaptureFixture,
) -> None:
    counts = _counts({"a": [math.nan, 0, 0, 1, 0, 0], "b": [0] * 6}, STALE.sources)
    with caplog.at_level(logging.WARNING, logger="memlab.scoring.inference.estimators"):
        estimator(STALE, counts)
    assert [r.getMessage() for r in caplog.records] == [
        "stale_rmst: owners a have no value (NaN) for its counts: the metric is NaN"
    ]


def test_complete_counts_log_nothing(caplog: pytest.LogCaptureFixture) -> None:
    counts = _counts({"a": [1, 2]}, RECALL.sources)
    with caplog.at_level(logging.DEBUG, logger="memlab.scoring.inference.estimators"):
        estimator(RECALL, counts)
    assert caplog.records == []
    assert missing_owners(RECALL, counts) == []


def test_a_count_metric_has_no_estimator() -> None:
    with pytest.raises(ValueError, match="metric final_facts: no estimator without a ratio"):
        estimator(metric_spec("final_facts"), _counts({"a": [3]}, ("facts",)))

"""Comparison rows in words, the verdict of each kind of row, and how lanes are paired; fast
(a few owners, hand-made counts), every expected string and number worked out by hand."""

from __future__ import annotations

import logging
import math
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pytest
from builders import FAKE_OWNERS as OWNERS
from builders import FakeRun
from builders import count_frames as _frames

from memlab.scoring.comparing.comparability import LaneFacts, MixedComparisonError
from memlab.scoring.comparing.comparison import (
    COMPARE_COLUMNS,
    CompareError,
    Lane,
    compare,
    compare_lanes,
    comparison_text,
    describe,
    describe_mde,
    owner_deltas,
)
from memlab.scoring.inference.stats import StatOptions

PRIMARY_ROW: dict[str, Any] = {
    "metric": "recall",
    "delta": 0.062,
    "delta_lo": 0.021,
    "delta_hi": 0.104,
    "level": 0.983,
    "p_value": 0.004,
    "p_holm": 0.012,
    "role": "primary",
    "significant": True,
    "verdict": "better",
}


def _row(**changes: Any) -> dict[str, Any]:
    return {**PRIMARY_ROW, **changes}


def test_a_primary_row_in_words() -> None:
    assert (
        describe(_row()) == "+6.2 pts [2.1, 10.4] (98.3% CI), p = 0.004 (Holm 0.012), significant"
    )
    assert (
        describe(_row(), holm_p=False) == "+6.2 pts [2.1, 10.4] (98.3% CI), p = 0.004, significant"
    )
    assert describe(_row(significant=False, verdict="no significant difference")).endswith(
        "p = 0.004 (Holm 0.012), not significant"
    )
    # Holm's p printed like the raw one: said once.
    assert describe(_row(p_holm=0.0041)) == (
        "+6.2 pts [2.1, 10.4] (98.3% CI), p = 0.004, significant"
    )
    assert describe(_row(p_value=0.0004, p_holm=0.002)).endswith(
        "p < 0.001 (Holm 0.002), significant"
    )
    assert describe(_row(p_value=0.0004, p_holm=0.0008)).endswith("p < 0.001, significant")
    assert describe(_row(p_value=0.0002, p_holm=math.nan)).endswith("p < 0.001, significant")
    assert describe(_row(p_value=0.001, p_holm=0.001)).endswith("p = 0.001, significant")
    # A row from before levels were recorded: no level, no "CI" label.
    old = {k: v for k, v in _row().items() if k != "level"}
    assert describe(old).startswith("+6.2 pts [2.1, 10.4], p = 0.004")


def test_a_secondary_row_and_missing_parts_in_words() -> None:
    secondary = _row(role="secondary", level=0.95, verdict="better (exploratory)")
    assert describe(secondary) == "+6.2 pts [2.1, 10.4] (95% CI), p = 0.004, exploratory"
    no_level = _row(role="secondary", level=math.nan, p_value=math.nan)
    assert describe(no_level) == "+6.2 pts [2.1, 10.4], p = -, exploratory"
    no_bounds = _row(role="secondary", delta_lo=math.nan, level=0.9875)
    assert describe(no_bounds) == "+6.2 pts [-] (98.8% CI), p = 0.004, exploratory"
    assert describe(_row(verdict="no change", delta=0.0)) == "no change"
    assert describe(_row(verdict="not applicable", delta=math.nan)) == "not applicable"
    without = {k: v for k, v in _row(delta=math.nan).items() if k != "verdict"}
    assert describe(without) == "not computable"
    # A number, not a rate: its own unit, no points.
    stale = _row(metric="stale_rmst", delta=-0.5, delta_lo=-0.9, delta_hi=-0.1)
    assert describe(stale).startswith("-0.5 [-0.9, -0.1] (98.3% CI)")


def test_the_mde_in_words() -> None:
    assert describe_mde({"metric": "recall", "mde": 0.177, "owners": 6}) == "17.7 pts"
    assert describe_mde({"metric": "recall", "mde": math.inf, "owners": 2}) == "none with 2 owners"
    assert describe_mde({"metric": "recall", "mde": math.nan, "owners": 2}) == "-"
    assert describe_mde({"metric": "stale_rmst", "mde": 0.25, "owners": 9}) == "0.25"


def test_comparison_text_row() -> None:
    row = _row(
        run="r",
        lane="thr=0.7",
        baseline=0.5,
        value=0.562,
        mde=0.1,
        owners=9,
        owners_better=4,
        owners_worse=1,
    )
    text = comparison_text(pd.DataFrame([row]))
    assert text.to_dict("records") == [
        {
            "configuration": "r: thr=0.7",
            "metric": "recall",
            "role": "primary",
            "baseline": "50.0%",
            "value": "56.2%",
            "delta [CI], p": "+6.2 pts [2.1, 10.4] (98.3% CI), p = 0.004 (Holm 0.012), significant",
            "verdict": "better",
            "MDE (80% power)": "10.0 pts",
            "owners better / worse": "4 / 1",
        }
    ]


def _run(
    name: str = "r", *, lanes: tuple[str, ...] = ("base", "cand"), **per_lane: dict[str, Any]
) -> FakeRun:
    """Lanes of ``OWNERS`` owners: 10 gold facts each, ``covered`` of them stored (and only
    those), unless ``per_lane[lane]`` sets other counts."""
    counts: dict[str, dict[str, np.ndarray]] = {}
    for lane in lanes:
        given = per_lane.get(lane, {})
        covered = np.asarray(given.get("covered", np.full(OWNERS, 5)), dtype=float)
        counts[lane] = {
            "gold_active": np.full(OWNERS, 10.0),
            "gold_covered": covered,
            "stored_precise": np.asarray(given.get("precise", covered), dtype=float),
            "facts": np.asarray(given.get("facts", covered), dtype=float),
            "failed": np.asarray(given.get("failed", np.zeros(OWNERS)), dtype=bool),
        }
    calls, sessions = _frames(counts)
    return FakeRun(name, calls, sessions, stats=StatOptions(resamples=400, seed=1))


def _by_metric(table: pd.DataFrame) -> pd.DataFrame:
    return table.set_index("metric")


def test_identical_lanes_are_no_change_and_no_test() -> None:
    table = compare(_run())
    by = _by_metric(table)
    recall = by.loc["recall"]
    assert recall["verdict"] == "no change" and not recall["significant"]
    assert math.isnan(recall["p_value"]) and math.isnan(recall["delta_lo"])
    assert math.isnan(recall["p_holm"])
    assert (recall["owners_better"], recall["owners_worse"]) == (0, 0)
    # No retracted fact on either side: the rate is undefined on both.
    assert by.loc["retracted_held_rate", "verdict"] == "not applicable"
    assert describe(table[table["metric"] == "recall"].iloc[0]) == "no change"


def test_a_clear_gain_on_a_primary_metric_is_better_at_holms_level() -> None:
    more = np.array([8.0] * 12 + [5.0] * 2)  # 12 owners gain 3 facts, 2 stay
    table = compare(_run(cand={"covered": more}))
    by = _by_metric(table)
    recall = by.loc["recall"]
    assert recall["role"] == "primary" and recall["verdict"] == "better"
    assert bool(recall["significant"])
    assert recall["delta"] == pytest.approx((12 * 3) / (OWNERS * 10))
    assert (recall["owners_better"], recall["owners_worse"]) == (12, 0)
    assert recall["owners"] == OWNERS
    assert recall["baseline"] == pytest.approx(0.5)
    # Recall and macro precision are unchanged in precision terms (every stored fact is
    # right): the family is recall alone, so its level is the run's 1 - alpha.
    assert by.loc["precision_macro", "verdict"] == "no change"
    assert recall["level"] == pytest.approx(0.95)
    assert recall["p_holm"] == pytest.approx(recall["p_value"])
    assert 0 < recall["delta_lo"] < recall["delta"] < recall["delta_hi"]
    assert list(table.columns) == list(COMPARE_COLUMNS)
    assert recall["mde"] > 0 and not math.isinf(recall["mde"])
    assert (by["significant"] == (by["verdict"].isin(["better", "worse"]))).all()


def test_more_parse_failures_are_worse() -> None:
    failed = np.array([1] * 12 + [0] * 2)
    by = _by_metric(compare(_run(cand={"failed": failed})))
    row = by.loc["parse_failure_rate"]
    assert row["delta"] == pytest.approx(12 / OWNERS)
    assert row["verdict"] == "worse" and bool(row["significant"])
    # Lower is better: owners whose rate rose are the worse ones.
    assert (row["owners_better"], row["owners_worse"]) == (0, 12)


def test_secondary_rows_are_exploratory() -> None:
    # Micro precision falls on every owner (2 invented facts each): a secondary rate.
    by = _by_metric(compare(_run(cand={"facts": np.full(OWNERS, 7.0)})))
    precision = by.loc["precision"]
    assert precision["role"] == "secondary"
    assert precision["verdict"] == "worse (exploratory)"
    assert not precision["significant"] and math.isnan(precision["p_holm"])
    assert precision["level"] == pytest.approx(0.95)
    # Two owners only move: no clear difference.
    facts = np.array([7.0, 6.0] + [5.0] * 12)
    by = _by_metric(compare(_run(cand={"facts": facts})))
    assert by.loc["precision", "verdict"] == "no clear difference (exploratory)"


def test_a_rate_defined_on_one_side_only() -> None:
    nothing = {"covered": np.zeros(OWNERS), "facts": np.zeros(OWNERS)}
    by = _by_metric(compare(_run(cand=nothing)))
    assert by.loc["precision", "verdict"] == "not computable"
    assert by.loc["precision", "owners"] == OWNERS  # the baseline's owners with facts
    assert math.isnan(by.loc["precision", "p_value"]) and math.isnan(by.loc["precision", "mde"])
    by = _by_metric(compare(_run(base=nothing)))
    assert by.loc["precision", "verdict"] == "not comparable"


def test_lanes_are_paired_by_label_across_runs() -> None:
    run_a = _run("a")
    run_b = _run("b", lanes=("cand", "base"), cand={"covered": np.full(OWNERS, 9.0)})
    table = compare(run_a, run_b, metrics=["recall"])
    assert table[["baseline_lane", "lane"]].values.tolist() == [["cand", "cand"], ["base", "base"]]
    assert table[["baseline_run", "run", "lane_id", "title"]].values.tolist() == [
        ["a", "b", "cand", "recall"],
        ["a", "b", "base", "recall"],
    ]
    assert table["delta"].tolist() == pytest.approx([0.4, 0.0])
    hint = "pass baseline_lane \\(--baseline-lane\\) to compare every lane with one lane"
    with pytest.raises(CompareError, match=f"lane 'x' has no lane of the same label in a; {hint}"):
        compare(run_a, _run("b", lanes=("x",)), metrics=["recall"])
    # One baseline lane named: every lane of run B against it.
    table = compare(run_a, run_b, baseline_lane="base", metrics=["recall"])
    assert table["baseline_lane"].tolist() == ["base", "base"]
    # Run A with one lane: that lane is everyone's baseline.
    single = _run("one", lanes=("only",))
    assert compare(single, run_b, metrics=["recall"])["baseline_lane"].tolist() == ["only"] * 2


def test_one_run_against_a_named_lane_and_errors() -> None:
    run = _run(lanes=("base", "cand", "third"), cand={"covered": np.full(OWNERS, 9.0)})
    table = compare(run, baseline_lane="cand", metrics=["recall"])
    assert table["lane"].tolist() == ["base", "third"]
    assert table["delta"].tolist() == pytest.approx([-0.4, -0.4])
    with pytest.raises(CompareError, match=r"run r: no lane 'nope'; lanes: base, cand, third"):
        compare(run, baseline_lane="nope")
    rates = "rates: parse_failure_rate, backend_error_rate, recall, precision"
    with pytest.raises(CompareError, match=f"cannot compare 'final_facts': not a rate; {rates}"):
        compare(run, metrics=["final_facts"])
    with pytest.raises(CompareError, match=r"cannot compare 'nothing': not a rate"):
        compare(run, metrics=["nothing"])
    with pytest.raises(CompareError, match="primary metric 'final_facts'"):
        compare(run, primary=["final_facts"])


def test_lanes_without_shared_owners_are_refused() -> None:
    run_a = _run("a", lanes=("base",))
    run_b = _run("b", lanes=("base",))
    sessions = run_b.sessions.assign(user_id=run_b.sessions["user_id"] + "x")
    calls = run_b.calls.assign(user_id=run_b.calls["user_id"] + "x")
    other = FakeRun("b", calls, sessions)
    message = "b: base and a: base share no owners; compare runs of the same dataset"
    with pytest.raises(CompareError, match=message):
        compare_lanes([(Lane(run_a, "base"), Lane(other, "base"))])


def test_owner_deltas_per_owner() -> None:
    covered = np.array([9.0, 4.0] + [5.0] * 12)
    run = _run(cand={"covered": covered})
    deltas = owner_deltas(Lane(run, "base"), Lane(run, "cand"), "recall")
    assert deltas.index.tolist()[:2] == ["u00", "u01"]
    assert deltas.loc["u00"].tolist() == pytest.approx([0.5, 0.9, 0.4])
    assert deltas.loc["u01"].tolist() == pytest.approx([0.5, 0.4, -0.1])
    assert deltas["delta"].iloc[2:].tolist() == [0.0] * 12


class LabelledRun(FakeRun):
    """Lanes whose labels are not their ids, and whose matcher is named per lane."""

    matchers: ClassVar[dict[str, str]] = {}

    def label(self, lane_id: str) -> str:
        return f"L-{lane_id}"

    def lane_facts(self, lane_id: str) -> LaneFacts:
        return LaneFacts(self.name, lane_id, matcher=self.matchers.get(lane_id, "default"))


def _labelled(run: FakeRun) -> LabelledRun:
    return LabelledRun(run.name, run.calls, run.sessions, stats=run.stats)


def test_a_baseline_lane_is_found_by_label_and_the_run_options_apply() -> None:
    base = _run(lanes=("base", "cand"), cand={"facts": np.full(OWNERS, 7.0)})
    run = _labelled(base)
    run.stats = StatOptions(resamples=400, seed=1, level=0.9)
    table = compare(run, baseline_lane="L-base")
    assert set(table["baseline_lane"]) == {"L-base"} and set(table["lane"]) == {"L-cand"}
    assert _by_metric(table).loc["precision", "level"] == pytest.approx(0.9)  # run's level
    with pytest.raises(CompareError, match=r"no lane ''; lanes: L-base, L-cand"):
        compare(run, baseline_lane="")
    empty = FakeRun("e", base.calls.iloc[:0], base.sessions.iloc[:0])
    with pytest.raises(CompareError, match=r"run e: no lane 'x'; lanes: none$"):
        compare(empty, baseline_lane="x")


def test_lanes_measured_differently_are_refused_unless_allowed() -> None:
    run = _labelled(_run())
    run.matchers = {"base": "default", "cand": "lexical"}
    # The candidate lane (lexical) is named first, and so is its matcher.
    refused = "r: cand vs r: base: different matcher: lexical vs default; "
    with pytest.raises(MixedComparisonError) as caught:
        compare(run, metrics=["recall"])
    assert str(caught.value).startswith(refused)
    with pytest.raises(MixedComparisonError):
        compare_lanes([(Lane(run, "base"), Lane(run, "cand"))], metrics=["recall"])
    table = compare(run, metrics=["recall"], allow_mixed=True)
    assert table.attrs["banners"] and "matcher" in table.attrs["banners"][0]


def test_a_metric_only_one_side_measured_is_left_out() -> None:
    run_a = _run("a", lanes=("base",))
    run_b = _run("b", lanes=("base",))
    run_a.sessions = run_a.sessions.assign(dup_embedding=1.0)
    metrics = set(compare(run_a, run_b)["metric"])
    assert "duplicate_rate" in metrics and "duplicate_rate_embedding" not in metrics
    run_b.sessions = run_b.sessions.assign(dup_embedding=0.0)
    assert "duplicate_rate_embedding" in set(compare(run_a, run_b)["metric"])


def test_the_resampling_options_are_the_ones_given() -> None:
    facts = np.array([7.0, 6.0, 8.0, 5.0, 9.0, 5.0, 6.0] * 2)
    run = _run(cand={"facts": facts})
    pair = [(Lane(run, "base"), Lane(run, "cand"))]
    bounds = {
        seed: compare_lanes(pair, metrics=["precision"], options=StatOptions(300, seed=seed)).loc[
            0, "delta_lo"
        ]
        for seed in (1, 2)
    }
    assert bounds[1] != bounds[2]  # a sentinel: the seed given is the seed used


def test_a_missing_count_is_logged_with_its_lane(caplog: pytest.LogCaptureFixture) -> None:
    run = _run()
    sessions = run.sessions.copy()
    mine = (sessions["lane_id"] == "cand") & (sessions["user_id"] == "u03")
    sessions.loc[mine, "facts"] = math.nan
    run.sessions = sessions
    with caplog.at_level(logging.WARNING, logger="memlab.scoring.inference.estimators"):
        compare(run, metrics=["precision"])
    assert any(m.startswith("r: cand: precision: owners u03 ") for m in caplog.messages)
    assert not any(m.startswith("r: base:") for m in caplog.messages)

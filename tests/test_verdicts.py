"""Verdicts that agree with their intervals, validated by simulation through ``compare``.

Each replication builds two lanes over 14 owners as memlab's counts would show them when a
model improves recall by 10 points and nothing else: the same seed for both lanes, so each
fact the baseline stores the candidate stores too, and the same replies (parse failures
identical). Every rate memlab compares is in the table, as in a report.
"""

from __future__ import annotations

import logging
import math
from typing import cast

import numpy as np
import pandas as pd
import pytest
from builders import FAKE_OWNERS as OWNERS
from builders import FakeRun
from builders import count_frames as _frames

from memlab.reporting.compare.gate import check_regressions
from memlab.runs.run import Run
from memlab.scoring.comparing.comparison import Lane, compare, compare_lanes
from memlab.scoring.count_specs import count_columns

REPLICATIONS = 100


def recall_gain(rng: np.random.Generator, gain: float = 0.10) -> FakeRun:
    """Baseline and a candidate whose recall propensity is ``gain`` higher, same seed."""
    gold = rng.integers(6, 15, size=OWNERS)
    propensity = rng.beta(7, 3, size=OWNERS)
    invented = rng.integers(0, 3, size=OWNERS)
    failed = rng.random(OWNERS) < 0.1
    covered = {"base": np.zeros(OWNERS), "cand": np.zeros(OWNERS)}
    for o in range(OWNERS):
        u = rng.random(gold[o])  # the same draws for both lanes: the same seed
        covered["base"][o] = (u < propensity[o]).sum()
        covered["cand"][o] = (u < min(propensity[o] + gain, 1.0)).sum()
    lanes = {
        lane: {
            "gold_active": gold,
            "gold_covered": found,
            "stored_precise": found,
            "facts": found + invented,
            "added": found + invented,
            "failed": failed,
        }
        for lane, found in covered.items()
    }
    calls, sessions = _frames(lanes)
    return FakeRun("sim", calls, sessions)


def _consistent(row: pd.Series) -> bool:
    """The verdict and the interval drawn beside it say the same thing."""
    excludes = bool(row["delta_lo"] > 0 or row["delta_hi"] < 0)
    verdict = str(row["verdict"])
    if verdict in ("better", "worse"):
        return excludes and bool(row["significant"])
    if verdict == "no significant difference":
        return not excludes and not bool(row["significant"])
    if verdict.endswith("(exploratory)"):
        return excludes == (verdict != "no clear difference (exploratory)")
    return math.isnan(row["delta_lo"]) or not excludes  # no change, not applicable, ...


@pytest.mark.simulation
def test_a_true_10_point_recall_gain_is_significant_and_never_contradicts_its_interval() -> None:
    rng = np.random.default_rng(2024)
    significant, contradictions, rows = 0, [], 0
    for _ in range(REPLICATIONS):
        table = compare(recall_gain(rng))
        recall = table.set_index("metric").loc["recall"]
        significant += recall["verdict"] == "better"
        rows += len(table)
        contradictions += [r["metric"] for _, r in table.iterrows() if not _consistent(r)]
        # Identical parse failures are no test: reported as "no change", not p = 1.
        failures = table.set_index("metric").loc["parse_failure_rate"]
        assert failures["verdict"] == "no change" and math.isnan(failures["p_value"])
    share = significant / REPLICATIONS
    print(f"recall +10 pts, 14 owners: significant in {share:.1%}; {rows} rows checked")
    assert share >= 0.80
    assert contradictions == []
    # A sentinel: every rate these counts give was checked (parse failures, backend errors,
    # recall, precision and its macro average, duplicates, retracted, forbidden, echoes).
    assert rows == 9 * REPLICATIONS


@pytest.mark.simulation
def test_macro_precision_does_not_move_when_only_fact_counts_do() -> None:
    """Every owner keeps its precision; the candidate stores 3x the facts of the owners with
    the best precision. Pooled precision rises (exploratory); the verdict (macro) sees no
    change, in every replication."""
    rng = np.random.default_rng(7)
    micro_moves = 0
    for _ in range(60):
        facts = rng.integers(4, 12, size=OWNERS).astype(float)
        precise = rng.binomial(facts.astype(int), 0.6).astype(float)
        more = np.where(precise / facts > np.median(precise / facts), 3.0, 1.0)
        lanes = {
            "base": {"facts": facts, "stored_precise": precise},
            "cand": {"facts": facts * more, "stored_precise": precise * more},
        }
        for counts in lanes.values():
            counts["gold_active"] = counts["gold_covered"] = np.full(OWNERS, 5.0)
        calls, sessions = _frames(lanes)
        by = compare(FakeRun("p", calls, sessions)).set_index("metric")
        assert by.loc["precision_macro", "verdict"] == "no change"
        assert by.loc["precision", "role"] == "secondary"
        micro_moves += by.loc["precision", "verdict"] == "better (exploratory)"
    assert micro_moves > 30  # what a micro verdict would have called a gain


def test_owners_without_gold_are_left_out_of_recall_n() -> None:
    rng = np.random.default_rng(3)
    run = recall_gain(rng)
    sessions = run.sessions.copy()
    empty = sessions["user_id"].isin(["u00", "u01", "u02"])
    sessions.loc[empty, ["gold_active", "gold_covered"]] = 0
    run.sessions = sessions
    by = compare(run).set_index("metric")
    assert by.loc["recall", "owners"] == OWNERS - 3
    assert by.loc["parse_failure_rate", "owners"] == OWNERS


def test_a_nan_count_is_loud(caplog: pytest.LogCaptureFixture) -> None:
    run = recall_gain(np.random.default_rng(4))
    sessions = run.sessions.copy()
    sessions.loc[(sessions["lane_id"] == "cand") & (sessions["user_id"] == "u05"), "facts"] = (
        math.nan
    )
    run.sessions = sessions
    with caplog.at_level(logging.WARNING, logger="memlab.scoring.inference.estimators"):
        table = compare_lanes([(Lane(run, "base"), Lane(run, "cand"))], options=run.stats)
    by = table.set_index("metric")
    assert math.isnan(by.loc["precision", "value"])
    assert by.loc["precision", "verdict"] == "not computable"
    assert any("u05" in message and "precision" in message for message in caplog.messages)


def _with_qa(run: FakeRun, rng: np.random.Generator, drop: float) -> FakeRun:
    """``run`` with memory-QA counts: 10 answerable questions per owner, the candidate right
    on each question the baseline gets right except a share ``drop`` of them (same draws)."""
    sessions = run.sessions.copy()
    asked = np.full(OWNERS, 10)
    skill = rng.beta(8, 2, size=OWNERS)
    right_base = np.zeros(OWNERS)
    right_cand = np.zeros(OWNERS)
    for o in range(OWNERS):
        u, v = rng.random(10), rng.random(10)
        right_base[o] = (u < skill[o]).sum()
        right_cand[o] = ((u < skill[o]) & (v >= drop)).sum()
    for lane, right in (("base", right_base), ("cand", right_cand)):
        mine = (sessions["lane_id"] == lane).to_numpy()
        for column in count_columns(by="qa"):
            sessions.loc[mine, column] = 0.0
        sessions.loc[mine, "qa_questions"] = asked
        sessions.loc[mine, "qa_answerable"] = asked
        sessions.loc[mine, "qa_correct"] = right
    return FakeRun(run.name, run.calls, sessions)


def test_qa_accuracy_is_primary_when_the_runs_have_memory_qa() -> None:
    rng = np.random.default_rng(11)
    plain = recall_gain(rng)
    with_qa = _with_qa(plain, rng, drop=0.5)
    table = compare(with_qa).set_index("metric")
    qa = table.loc["qa_accuracy"]
    assert qa["role"] == "primary" and qa["verdict"] == "worse" and bool(qa["significant"])
    # The Holm family is every changed primary row: QA accuracy is one of the m tests.
    tested = table[(table["role"] == "primary") & table["p_value"].notna()]
    assert "qa_accuracy" in tested.index and len(tested) >= 2
    p = tested["p_value"].to_numpy(dtype=float)
    order = np.argsort(p, kind="stable")
    adjusted = np.minimum(np.maximum.accumulate(p[order] * (len(p) - np.arange(len(p)))), 1.0)
    expected = dict(zip(tested.index[order], adjusted, strict=True))
    assert qa["p_holm"] == pytest.approx(expected["qa_accuracy"])
    # Without memory QA the metric is no row at all, and the family is one test smaller.
    bare = compare(plain).set_index("metric")
    assert "qa_accuracy" not in bare.index
    assert bare["p_holm"].notna().sum() == len(tested) - 1
    # A grid that names its own family keeps it: QA accuracy is then exploratory.
    chosen = FakeRun(with_qa.name, with_qa.calls, with_qa.sessions, primary=("recall",))
    assert compare(chosen).set_index("metric").loc["qa_accuracy", "role"] == "secondary"


def test_the_gate_fails_a_significant_qa_accuracy_regression() -> None:
    rng = np.random.default_rng(12)
    run = _with_qa(recall_gain(rng, gain=0.0), rng, drop=0.5)
    base, cand = FakeRun("base", *_lane(run, "base")), FakeRun("cand", *_lane(run, "cand"))
    found, table = check_regressions(cast(Run, cand), cast(Run, base))
    assert [r.metric for r in found] == ["qa_accuracy"]
    assert set(table["metric"]) == {
        "parse_failure_rate",
        "recall",
        "precision_macro",
        "qa_accuracy",
    }
    # The same runs without the QA counts: nothing regressed.
    strip = list(count_columns(by="qa"))
    bare_base = FakeRun("base", base.calls, base.sessions.drop(columns=strip))
    bare_cand = FakeRun("cand", cand.calls, cand.sessions.drop(columns=strip))
    assert check_regressions(cast(Run, bare_cand), cast(Run, bare_base))[0] == []


def _lane(run: FakeRun, lane: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    calls = run.calls[run.calls["lane_id"] == lane].assign(lane_id="base")
    sessions = run.sessions[run.sessions["lane_id"] == lane].assign(lane_id="base")
    return calls.reset_index(drop=True), sessions.reset_index(drop=True)

"""The consolidation curve's numbers, on hand-built re-asked answers and memory sizes.

Expected values are counted by hand from the tables below; the collapse flag is checked
against the intervals as displayed, and its false-positive rate by simulation.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

from memlab.core.pipeline.injection import get_token_counter
from memlab.scoring.consolidation import (
    CURVE_COLUMNS,
    collapsed,
    curve_table,
    memory_tokens,
    shown_bounds,
)
from memlab.scoring.inference.coverage import MIN_OWNERS
from memlab.scoring.inference.stats import StatOptions

SIZES = {"u1": [100, 80, 40], "u2": [50, 50, 20], "u3": [10, 10, 10]}
# (owner, question, session asked again after, correct under the judge)
REASKED = [
    ("u1", "q1", 1, True),
    ("u1", "q2", 1, False),
    ("u2", "q1", 1, True),
    ("u3", "q1", 1, True),
    ("u1", "q1", 2, False),
    ("u1", "q2", 2, False),
    ("u2", "q1", 2, False),
    ("u3", "q1", 2, True),
]


def _sizes(sizes: dict[str, list[int]], lane: str = "a") -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"lane_id": lane, "sample": 0, "user_id": user, "session_index": index,
             "memory_tokens": tokens, "days": float(index)}
            for user, values in sizes.items()
            for index, tokens in enumerate(values)
        ]
    )  # fmt: skip


def _answer(user: str, question: str, session: int, correct: bool, lane: str = "a") -> Any:
    return {
        "lane_id": lane,
        "sample": 0,
        "user_id": user,
        "question_id": question,
        "session_index": session,
        "asked_at": 0,
        "condition": "memory",
        "category": "single-hop",
        "kind": "answerable",
        "abstained": False,
        "verdicts": {"lenient": {"answer": correct}, "strict": {"answer": False}},
    }


def _reasks(rows: list[tuple[str, str, int, bool]]) -> pd.DataFrame:
    return pd.DataFrame([_answer(*row) for row in rows])


def test_one_point_per_session_with_hand_counted_values() -> None:
    table = curve_table(_reasks(REASKED), _sizes(SIZES), "lenient")
    assert list(table.columns) == list(CURVE_COLUMNS)
    assert list(table["session_index"]) == [0, 1, 2]
    assert list(table["owners"]) == [3, 3, 3]
    assert table["memory_tokens"].tolist() == pytest.approx([160 / 3, 140 / 3, 70 / 3])
    assert list(table["reasked"]) == [0, 4, 4]
    assert math.isnan(table.loc[0, "retained"]) and math.isnan(table.loc[0, "size_ratio"])
    assert table.loc[1, "retained"] == pytest.approx(3 / 4)
    assert table.loc[2, "retained"] == pytest.approx(1 / 4)
    # Sizes then (80 + 80 + 50 + 10) and at 2 (40 + 40 + 20 + 10) over sizes when answered
    # (100 + 100 + 50 + 10).
    assert table.loc[1, "size_ratio"] == pytest.approx(220 / 260)
    assert table.loc[2, "size_ratio"] == pytest.approx(110 / 260)
    # 3 owners: fewer than the bootstrap's coverage was measured at, and none of these is a
    # rate near 0 or 1, so no interval is given (NaN bounds), never one that misleads.
    assert MIN_OWNERS["bootstrap"] > 3
    for name in ("memory_tokens", "retained", "size_ratio"):
        row = table.loc[2]
        assert math.isnan(row[f"{name}_lo"]) and math.isnan(row[f"{name}_hi"]), name


def test_another_judge_counts_its_own_verdicts() -> None:
    table = curve_table(_reasks(REASKED), _sizes(SIZES), "strict")
    assert table.loc[1, "retained"] == 0.0 and table.loc[2, "retained"] == 0.0


def test_samples_of_an_owner_are_averaged_before_owners_are_pooled() -> None:
    sizes = _sizes({"u1": [10, 10]})
    twice = pd.concat([sizes, sizes.assign(sample=1, memory_tokens=[30, 30])])
    reasks = _reasks([("u1", "q1", 1, True)])
    second = reasks.assign(sample=1, verdicts=[{"lenient": {"answer": False}}])
    table = curve_table(pd.concat([reasks, second]), twice, "lenient")
    assert table.loc[1, "memory_tokens"] == 20 and table.loc[1, "retained"] == 0.5
    assert table.loc[1, "reasked"] == 1  # one question per sample, averaged


def test_a_collapse_is_flagged_and_a_shrinking_memory_that_still_answers_is_not() -> None:
    owners = [f"u{k:02d}" for k in range(12)]
    shrinking = {user: [1000 + 10 * k, 200 + k] for k, user in enumerate(owners)}
    reference = [(user, "q1", 0, True) for user in owners]
    wrong = reference + [(user, "q1", 1, False) for user in owners]
    right = reference + [(user, "q1", 1, True) for user in owners]
    assert bool(curve_table(_reasks(wrong), _sizes(shrinking), "lenient").loc[1, "collapse"])
    assert not curve_table(_reasks(right), _sizes(shrinking), "lenient").loc[1, "collapse"]
    growing = {user: [200 + k, 1000 + 10 * k] for k, user in enumerate(owners)}
    assert not curve_table(_reasks(wrong), _sizes(growing), "lenient").loc[1, "collapse"]


@pytest.mark.parametrize(
    ("collapse_p", "size_hi", "flag"),
    [
        (0.01, 0.996, False),  # size shown as 1.00: the interval reaches the reference
        (0.01, 0.994, True),  # shown as 0.99
        (0.04, 0.5, False),  # not below the flag's level, 4%
        (0.045, 0.5, False),  # below the comparisons' 5%, not the flag's 4%
        (0.0399, 0.5, True),
        (math.nan, 0.5, False),  # no reference measured
        (0.01, math.nan, False),
    ],
)
def test_the_flag_needs_a_significant_loss_and_a_smaller_memory_as_shown(
    collapse_p: float, size_hi: float, flag: bool
) -> None:
    assert collapsed(collapse_p, size_hi) is flag
    shown_s = shown_bounds("size_ratio", 0.0, size_hi)
    below = shown_s != "[-]" and float(shown_s.strip("[]").split(", ")[1]) < 1.0
    assert (collapse_p < 0.04 and below) is flag


@pytest.mark.simulation
def test_false_collapse_rate_when_the_memory_keeps_its_size() -> None:
    """Questions are lost (true retained 50%) but the memory's size does not change in
    expectation (per-owner noise around a ratio of 1): collapse is a false positive, and
    should be flagged about as often as a one-sided 2.5% tail (the size interval's)."""
    rng = np.random.default_rng(7)
    owners = [f"u{k:02d}" for k in range(20)]
    trials, flagged = 200, 0
    options = StatOptions(resamples=500)
    for _ in range(trials):
        then = rng.uniform(50, 150, len(owners))
        now = then * rng.uniform(0.8, 1.2, len(owners))
        sizes = _sizes({u: [float(a), float(b)] for u, a, b in zip(owners, then, now, strict=True)})
        rows = [(u, "q1", 0, True) for u in owners]
        rows += [(u, "q1", 1, bool(rng.random() < 0.5)) for u in owners]
        table = curve_table(_reasks(rows), sizes, "lenient", options=options)
        flagged += bool(table.loc[1, "collapse"])
    assert flagged / trials <= 0.06


@pytest.mark.simulation
def test_a_true_collapse_is_flagged() -> None:
    """30% of the answers lost and the memory shrunk to 40-80% of its size (20 owners, two
    questions each): flagged in at least 90% of the curves (measured: 100 of 100)."""
    rng = np.random.default_rng(11)
    owners = [f"u{k:02d}" for k in range(20)]
    trials, flagged = 50, 0
    options = StatOptions(resamples=500)
    for _ in range(trials):
        then = rng.uniform(50, 150, len(owners))
        now = then * rng.uniform(0.4, 0.8, len(owners))
        sizes = _sizes({u: [float(a), float(b)] for u, a, b in zip(owners, then, now, strict=True)})
        rows = [(u, q, 0, True) for u in owners for q in ("q1", "q2")]
        rows += [(u, q, 1, bool(rng.random() < 0.7)) for u in owners for q in ("q1", "q2")]
        table = curve_table(_reasks(rows), sizes, "lenient", options=options)
        flagged += bool(table.loc[1, "collapse"])
    assert flagged / trials >= 0.9


def test_memory_tokens_counts_facts_and_summaries_one_by_one() -> None:
    counter = get_token_counter("tiktoken")
    memory = {
        "facts": [{"content": "Lives in Leeds"}, {"content": "Has a dog named Rex"}],
        "user": {"workContext": {"summary": "Nurse at the city hospital."}},
        "history": {"recentMonths": {"summary": ""}, "earlierContext": {"summary": "Moved."}},
    }
    expected = sum(
        counter.count(t)
        for t in ("Lives in Leeds", "Has a dog named Rex", "Nurse at the city hospital.", "Moved.")
    )
    assert memory_tokens(memory) == expected > 0
    assert memory_tokens({}) == 0 and memory_tokens(None) == 0


def test_no_sizes_gives_an_empty_curve() -> None:
    table = curve_table(_reasks(REASKED), pd.DataFrame(), "lenient")
    assert table.empty and list(table.columns) == list(CURVE_COLUMNS)

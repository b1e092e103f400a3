"""The judge band, flip rate and Cohen's kappa of memory QA, against numbers worked by hand.

Ten answerable answers (one per owner) graded by two judges, ``a`` and ``b``:

=========  =====  =====  =======
answers     a      b      count
=========  =====  =====  =======
q0-q3      right  right    4
q4-q5      right  wrong    2
q6         wrong  right    1
q7-q9      wrong  wrong    3
=========  =====  =====  =======

- accuracy: a 6/10, b 5/10, so the band is [0.5, 0.6], 0.1 wide;
- flips: 2 + 1 = 3 of 10 (0.3);
- kappa: observed agreement 0.7; by chance 0.6 x 0.5 + 0.4 x 0.5 = 0.5; (0.7 - 0.5) / 0.5 = 0.4.

Each number would move under a plausible slip: kappa without the chance correction is 0.7,
a band with min and max swapped is negative, flips without the ones ``b`` accepts are 2.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from memlab.scoring.qa.qa_metrics import judge_agreement, judge_band
from memlab.scoring.qa.qa_verdicts import verdict_table

A = [True] * 4 + [True] * 2 + [False] + [False] * 3
B = [True] * 4 + [False] * 2 + [True] + [False] * 3


def _row(i: int, verdicts: dict[str, Any], **changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "lane_id": "lane",
        "sample": 0,
        "user_id": f"owner{i}",
        "question_id": f"q{i}",
        "condition": "memory",
        "session_index": 0,
        "category": "single-hop",
        "kind": "answerable",
        "abstained": False,
        "error": None,
        "verdicts": verdicts,
        "f1": 0.0,
        "bleu1": 0.0,
        "f1_original": None,
        "bleu1_original": None,
    }
    row.update(changes)
    return row


@pytest.fixture
def answers() -> pd.DataFrame:
    rows = [
        _row(i, {"a": {"answer": a}, "b": {"answer": b}})
        for i, (a, b) in enumerate(zip(A, B, strict=True))
    ]
    return pd.DataFrame(rows)


def test_flips_and_kappa_by_hand(answers: pd.DataFrame) -> None:
    (pair,) = judge_agreement(answers).to_dict("records")
    assert (pair["judge_a"], pair["judge_b"], pair["graded"]) == ("a", "b", 10)
    assert pair["flips"] == 3
    assert pair["flip_rate"] == pytest.approx(0.3)
    assert pair["kappa"] == pytest.approx(0.4)


def test_the_band_by_hand(answers: pd.DataFrame) -> None:
    (band,) = judge_band(answers).to_dict("records")
    assert band["accuracy:a"] == pytest.approx(0.6)
    assert band["accuracy:b"] == pytest.approx(0.5)
    assert (band["band_lo"], band["band_hi"]) == (pytest.approx(0.5), pytest.approx(0.6))
    assert band["band"] == pytest.approx(0.1)
    assert band["flip_rate"] == pytest.approx(0.3)
    assert band["kappa"] == pytest.approx(0.4)


def test_answers_no_judge_graded_stay_out_of_the_agreement(answers: pd.DataFrame) -> None:
    # An abstention on an answerable question (no judge asked) and an unreadable verdict of b:
    # the agreement is over the same ten answers, the accuracy over twelve.
    extra = pd.DataFrame(
        [
            _row(10, {}, abstained=True, answer="I don't know."),
            _row(11, {"a": {"answer": True}, "b": {"answer": None}}),
        ]
    )
    both = pd.concat([answers, extra], ignore_index=True)
    (pair,) = judge_agreement(both).to_dict("records")
    assert (pair["graded"], pair["flips"]) == (10, 3)
    assert pair["kappa"] == pytest.approx(0.4)
    (band,) = judge_band(both).to_dict("records")
    assert band["accuracy:a"] == pytest.approx(7 / 12)
    assert band["accuracy:b"] == pytest.approx(5 / 12)


def test_verdict_statuses_and_the_adversarial_abstention() -> None:
    rows = pd.DataFrame(
        [
            # An adversarial question's abstention is right even when the judge says WRONG.
            _row(0, {"a": {"answer": False}}, kind="adversarial", abstained=True),
            _row(1, {"a": {"answer": False}}, kind="adversarial", abstained=False),
            _row(2, {}, abstained=True),  # answerable: wrong, no judge
            _row(3, {}, error="connection refused"),  # no answer: wrong, counted
            _row(4, {"a": {"answer": None}}),  # unreadable: wrong, counted
            _row(5, {"a": {"answer": True}}),
        ]
    )
    table = verdict_table(rows, ["a"])
    table = table[table["key"] == "answer"].set_index("question_id")
    assert list(table["correct"]) == [True, False, False, False, False, True]
    assert list(table["status"]) == [
        "judged",
        "judged",
        "abstained",
        "answer_error",
        "no_verdict",
        "judged",
    ]

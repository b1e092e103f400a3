"""The collapse flag's arithmetic, by hand on small tables: retained against the reference
re-ask (one-sided, owner-clustered), Holm over the curve's sessions, and a curve asked without
a reference flags nothing."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import pytest

from memlab.scoring.consolidation import curve_table

# With n owners whose one question was right in the reference and wrong now, every owner's
# difference is -1: of the 2**n sign flips only "none" and "all" reach |delta| = 1, so the
# exact two-sided sign-flip p-value is 2 / 2**n, the one-sided one 1 / 2**n; every bootstrap
# draw is -1, so the bootstrap p-value is 0 and the test's p-value is the sign-flip one.


def _sizes(owners: list[str], sessions: int) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"lane_id": "a", "sample": 0, "user_id": u, "session_index": i,
             "memory_tokens": 1000.0 + k if i == 0 else 100.0 + k, "days": float(i)}
            for k, u in enumerate(owners)
            for i in range(sessions + 1)
        ]
    )  # fmt: skip


def _row(user: str, session: int, correct: bool) -> dict[str, Any]:
    return {
        "lane_id": "a", "sample": 0, "user_id": user, "question_id": "q1",
        "session_index": session, "asked_at": 0, "condition": "memory",
        "category": "single-hop", "kind": "answerable", "abstained": False,
        "verdicts": {"j": {"answer": correct}},
    }  # fmt: skip


def _lost(owners: int, sessions: int, reference: bool = True) -> pd.DataFrame:
    users = [f"u{k}" for k in range(owners)]
    rows = [_row(u, 0, True) for u in users] if reference else []
    rows += [_row(u, s, False) for u in users for s in range(1, sessions + 1)]
    return curve_table(pd.DataFrame(rows), _sizes(users, sessions), "j")


def test_one_session_tests_at_one_over_two_to_the_owners() -> None:
    table = _lost(5, 1)
    assert table.loc[1, "reference"] == 1.0 and table.loc[1, "retained"] == 0.0
    assert table.loc[1, "collapse_p"] == pytest.approx(1 / 32)
    six = _lost(6, 1)
    assert six.loc[1, "collapse_p"] == pytest.approx(1 / 64)
    assert six.loc[1, "size_ratio_hi"] < 1 and bool(six.loc[1, "collapse"])


def test_two_sessions_are_one_family_holm_doubles_the_smallest_p() -> None:
    table = _lost(5, 2)
    # Both sessions at 1/32; Holm: 2 * 1/32 = 0.0625 for both: no flag on this curve.
    assert table.loc[1:2, "collapse_p"].tolist() == pytest.approx([1 / 16, 1 / 16])
    assert not table["collapse"].any()
    six = _lost(6, 2)  # 2 * 1/64 = 0.03125: flagged at both sessions
    assert six.loc[1:2, "collapse_p"].tolist() == pytest.approx([1 / 32, 1 / 32])
    assert six.loc[1:2, "collapse"].all()


def test_retained_at_the_reference_is_no_flag() -> None:
    users = [f"u{k}" for k in range(8)]
    rows = [_row(u, s, k % 2 == 0) for k, u in enumerate(users) for s in (0, 1)]
    table = curve_table(pd.DataFrame(rows), _sizes(users, 1), "j")
    assert table.loc[1, "retained"] == table.loc[1, "reference"] == 0.5
    assert table.loc[1, "collapse_p"] == 1.0 and not table.loc[1, "collapse"]


def test_a_curve_without_its_reference_flags_nothing() -> None:
    table = _lost(12, 2, reference=False)
    assert table.loc[1, "retained"] == 0.0 and table.loc[1, "reasked"] == 12
    assert math.isnan(table.loc[1, "reference"]) and math.isnan(table.loc[1, "collapse_p"])
    assert not table["collapse"].any()

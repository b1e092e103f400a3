"""The paired delta's interval on few owners: none below the owner count at which its coverage
was measured at least 0.93 (6 owners, ``benchmarks/paired_coverage.py``, docs/statistics.md),
and a verdict never drawn beside a missing interval.

The minimum of 6 and the printed texts are written out here from the documented table and
wording, not read from the code under test.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from builders import one_turn, sweep_scripted, update, write_owners

from memlab.backends.scripted import ScriptedBackend
from memlab.cli.main import main
from memlab.core.pipeline.llm import CompletionRequest
from memlab.runs.run import Run
from memlab.scoring.comparing.comparison import describe
from memlab.scoring.inference.paired_tests import paired
from memlab.scoring.inference.stats import ratio_estimator

T0 = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)
TOO_FEW = "too few owners for an interval (n = {})"


@pytest.mark.parametrize("owners", [2, 3, 4, 5, 6, 7])
def test_the_delta_interval_is_printed_from_six_owners(owners: int) -> None:
    # Every owner gains 2 of 10: the method's interval exists on any n >= 2.
    base = ratio_estimator(np.full(owners, 4.0), np.full(owners, 10.0))
    cand = ratio_estimator(np.full(owners, 6.0) + np.arange(owners) % 2, np.full(owners, 10.0))
    test = paired(base, cand)
    lo, hi = test.interval(0.05)
    assert math.isfinite(lo) and math.isfinite(hi) and lo <= test.delta <= hi
    shown = test.at(0.05)
    if owners < 6:
        assert math.isnan(shown[0]) and math.isnan(shown[1])
    else:
        assert shown == (lo, hi)


def _owner(user: str) -> dict[str, Any]:
    return {
        "user_id": user,
        "sessions": [
            one_turn(
                f"{user}-{s}",
                T0 + timedelta(days=s),
                f"News [{user}:{s}]",
                facts=[
                    {"id": f"{user}-{s}a", "content": "Collects stamps", "category": "context"},
                    {"id": f"{user}-{s}b", "content": "Plays the violin", "category": "context"},
                ],
            )
            for s in range(3)
        ],
    }


def _run(tmp: Path, name: str, owners: int, both: bool) -> Run:
    """Recall 0.5 (the first fact only) or 1.0 (both facts) on every owner."""

    def reply(request: CompletionRequest) -> str:
        return update("Collects stamps", "Plays the violin") if both else update("Collects stamps")

    data = write_owners(tmp / f"{name}.jsonl", [_owner(f"u{i:02d}") for i in range(owners)])
    grid = {"name": name, "replay_mode": "per_session"}
    return sweep_scripted(data, grid, ScriptedBackend(function=reply), tmp / "runs")


def test_a_two_owner_comparison_prints_no_interval_and_the_gate_refuses_its_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, cand = _run(tmp_path, "base", 2, False), _run(tmp_path, "cand", 2, True)
    assert cand.summary.iloc[0]["recall"] == pytest.approx(1.0)
    assert main(["compare", str(base.path), str(cand.path), "--csv"]) == 0
    out = capsys.readouterr().out
    assert "recall" in out
    assert main(["compare", str(base.path), str(cand.path)]) == 0
    narrow = capsys.readouterr().out
    assert f"[-]: {TOO_FEW.format(2)}" in narrow.splitlines()
    assert main(["compare", str(base.path), str(cand.path), "--wide"]) == 0
    wide = capsys.readouterr().out
    line = next(ln for ln in wide.splitlines() if "Recall" in ln or "recall" in ln)
    # +50 points on both owners, yet no bounds: 2 owners are below the 6 the paired
    # interval's coverage was measured on; and the verdict draws no difference beside it:
    # with no test possible on 2 owners it says the comparison cannot tell.
    assert TOO_FEW.format(2) in line, wide
    assert "CI)" not in line and "[" not in line.split(TOO_FEW.format(2))[0].split("pts")[-1]
    assert "inconclusive: no test possible: 2 owners" in line and "better" not in line
    # The bound the gate uses (one lane's, recall 0.5 away from 0 and 1) is refused the same
    # way, in one line.
    assert main(["gate", str(base.path), "--min-recall", "0.4", "--use-bound"]) == 1
    failed = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("FAILED")]
    assert failed == [
        f"FAILED default: recall 95% lower bound = {TOO_FEW.format(2)} (value 0.5), "
        "required >= 0.4 [--min-recall]"
    ]
    # And no regression gate passes on 2 owners.
    gate = ["gate", str(base.path), "--baseline", str(cand.path)]
    assert main([*gate, "--no-significant-regression", "recall"]) == 1
    assert "no test possible: 2 owners" in capsys.readouterr().out


def test_describe_says_why_a_row_has_no_interval() -> None:
    row = {
        "metric": "recall", "baseline": 0.25, "value": 0.75, "delta": 0.5,
        "delta_lo": math.nan, "delta_hi": math.nan,
        "level": 0.95, "p_value": 0.5, "role": "primary", "p_holm": 0.5,
        "significant": False, "verdict": "no significant difference", "owners": 3,
    }  # fmt: skip
    assert describe(row) == f"+50.0 pts ({TOO_FEW.format(3)}), p = 0.500, not significant"
    # With enough owners a missing bound stays "[-]" (intervals turned off, say).
    assert describe({**row, "owners": 6}) == "+50.0 pts [-] (95% CI), p = 0.500, not significant"


def test_no_verdict_of_a_difference_beside_a_missing_interval(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 4 owners all gain: the exact sign-flip p-value is 2 / 2**4 = 0.125, below an alpha of
    # 0.2, but 4 owners get no interval (coverage measured from 6), so no "better" either.
    base, cand = _run(tmp_path, "base4", 4, False), _run(tmp_path, "cand4", 4, True)
    assert main(["compare", str(base.path), str(cand.path), "--wide", "--alpha", "0.2"]) == 0
    wide = capsys.readouterr().out
    line = next(ln for ln in wide.splitlines() if "Recall" in ln or "recall" in ln)
    assert TOO_FEW.format(4) in line and "p = 0.125" in line, wide
    # The verdict cell says why it cannot tell: no test is possible on 4 owners.
    assert "inconclusive: no test possible: 4 owners" in line and " better " not in line


@pytest.mark.parametrize(("owners", "shown"), [(6, False), (13, False), (14, True)])
def test_a_rate_near_zero_needs_fourteen_owners_for_its_delta_interval(
    owners: int, shown: bool
) -> None:
    # 3% -> 5% parse failures: the paired bootstrap covered 0.908 on 6 owners, 0.940 on 14.
    den = np.full(owners, 100.0)
    base = ratio_estimator(np.full(owners, 3.0) + np.arange(owners) % 2, den)
    cand = ratio_estimator(np.full(owners, 5.0) + np.arange(owners) % 3, den)
    test = paired(base, cand)
    assert math.isfinite(test.interval(0.05)[0])
    assert math.isfinite(test.at(0.05)[0]) is shown

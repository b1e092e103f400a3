"""Intervals at the edges: few owners, rates near 0 or 1, lanes with no event at all.

Expected bounds are computed here from their formulas with ``scipy.stats`` (Student-t, normal
and beta quantiles), not by the code under test.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from builders import one_turn, sweep_scripted, update, write_owners
from scipy import stats as sps

from memlab.backends.scripted import ScriptedBackend
from memlab.cli.main import main
from memlab.core.pipeline.llm import CompletionRequest
from memlab.runs.run import Run
from memlab.scoring.inference.coverage import MIN_OWNERS, clustered_exact, interval_method
from memlab.scoring.inference.paired_tests import paired
from memlab.scoring.inference.stats import bootstrap, ratio_estimator

T0 = datetime(2025, 6, 2, 9, 0, tzinfo=UTC)


def _shrink(owners: int) -> float:
    """``(z / t[n - 1])^2`` at 95%."""
    return float((sps.norm.ppf(0.975) / sps.t.ppf(0.975, owners - 1)) ** 2)


def test_all_zero_upper_bound_is_the_exact_bound_on_the_pooled_count() -> None:
    owners, per_owner = 14, 10
    lo, hi = clustered_exact(np.zeros(owners), np.full(owners, per_owner))
    trials = owners * per_owner * _shrink(owners)
    assert lo == 0.0
    assert hi == pytest.approx(1 - 0.025 ** (1 / trials), rel=1e-9)
    assert 0 < hi < 0.05  # not degenerate, and informative with 140 replies


def test_exact_interval_uses_the_owners_spread() -> None:
    num, den = np.array([0, 1, 0, 3, 0, 0]), np.array([10, 12, 8, 15, 9, 11])
    p = num.sum() / den.sum()
    n = len(num)
    variance = n / (n - 1) * ((num - p * den) ** 2).sum() / den.sum() ** 2
    trials = min(den.sum(), p * (1 - p) / variance) * _shrink(n)
    x = p * trials
    expected = (sps.beta.ppf(0.025, x, trials - x + 1), sps.beta.ppf(0.975, x + 1, trials - x))
    assert clustered_exact(num, den) == pytest.approx(expected, rel=1e-9)
    # More spread between owners than a binomial: wider than the plain pooled exact bound.
    assert clustered_exact(num, den)[1] > sps.beta.ppf(0.975, num.sum() + 1, den.sum() - num.sum())


def test_few_owners_get_no_interval_and_enough_get_the_bootstrap() -> None:
    few = bootstrap(ratio_estimator([3, 5], [10, 10]))
    assert few.method == "too few owners" and math.isnan(few.lo) and math.isnan(few.hi)
    least = MIN_OWNERS["bootstrap"]
    below = bootstrap(ratio_estimator([4, 5, 6, 5, 4, 6][: least - 1], [10] * (least - 1)))
    assert math.isnan(below.lo)
    enough = bootstrap(ratio_estimator([4, 5, 6, 5, 4, 6, 5][:least], [10] * least))
    assert enough.method == "bootstrap" and enough.lo < 0.5 < enough.hi


def test_rates_near_an_edge_get_the_exact_interval_at_any_owner_count() -> None:
    assert interval_method(ratio=True, owners=30, estimate=0.03) == "clustered_exact"
    assert interval_method(ratio=True, owners=30, estimate=0.97) == "clustered_exact"
    assert interval_method(ratio=True, owners=30, estimate=0.5) == "bootstrap"
    assert interval_method(ratio=False, owners=2, estimate=0.0) == "too few owners"
    found = bootstrap(ratio_estimator([0, 0], [10, 12]))
    assert found.method == "clustered_exact"
    assert found.hi == pytest.approx(1 - 0.025 ** (1 / (22 * _shrink(2))), rel=1e-9)


def test_two_all_zero_lanes_have_a_finite_mde() -> None:
    zeros, den = np.zeros(14), np.full(14, 10.0)
    test = paired(ratio_estimator(zeros, den), ratio_estimator(zeros, den))
    assert not test.changed
    # Each side's spread from its exact interval (width / 2z), two independent sides.
    side = clustered_exact(zeros, den)[1] / (2 * sps.norm.ppf(0.975))
    assert test.planning_se == pytest.approx(math.hypot(side, side), rel=1e-9)
    assert math.isfinite(test.mde(0.05, 0.8)) and test.mde(0.05, 0.8) > 0


def _owner(user: str, sessions: int) -> dict[str, Any]:
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
            for s in range(sessions)
        ],
    }


def _backend() -> ScriptedBackend:
    """Always a valid update (no parse failure) reporting the first fact: recall 0.5."""

    def reply(request: CompletionRequest) -> str:
        return update("Collects stamps")

    return ScriptedBackend(function=reply)


def _run(tmp: Path, name: str, owners: int) -> Run:
    data = write_owners(tmp / f"{name}.jsonl", [_owner(f"u{i:02d}", 3) for i in range(owners)])
    grid = {"name": name, "replay_mode": "per_session"}
    return sweep_scripted(data, grid, _backend(), tmp / "runs")


def test_gate_use_bound_refuses_a_bound_on_two_owners(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run(tmp_path, "two", 2)
    summary = run.summary.iloc[0]
    assert summary["recall"] == pytest.approx(0.5)
    assert main(["gate", str(run.path), "--min-recall", "0.4"]) == 0  # the value passes
    capsys.readouterr()
    assert main(["gate", str(run.path), "--min-recall", "0.4", "--use-bound"]) == 1
    out = capsys.readouterr().out
    failed = [line for line in out.splitlines() if line.startswith("FAILED")]
    assert failed == [
        "FAILED default: recall 95% lower bound = too few owners for an interval (n = 2) "
        "(value 0.5), required >= 0.4 [--min-recall]"
    ]


def test_gate_on_two_all_zero_lanes_states_what_it_could_detect(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, cand = _run(tmp_path, "base", 14), _run(tmp_path, "cand", 14)
    assert base.summary.iloc[0]["parse_failure_rate"] == 0.0
    hi = float(cand.summary.iloc[0]["parse_failure_rate_hi"])
    replies = 14 * 3
    assert hi == pytest.approx(1 - 0.025 ** (1 / (replies * _shrink(14))), rel=1e-9)
    code = main(
        [
            "gate",
            str(cand.path),
            "--baseline",
            str(base.path),
            "--no-significant-regression",
            "parse_failure_rate",
        ]
    )
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if "parse_failure_rate" in line)
    # 42 replies cannot show a 5-point regression; either way the MDE is stated, never "-".
    assert code == 1 and line.startswith("FAILED"), out
    assert "cannot detect a regression of 5.0 pts with 14 owners (MDE " in line
    assert "MDE -" not in out and "no spread" not in out


def test_a_ratio_that_is_not_a_rate_keeps_its_bootstrap_interval() -> None:
    """Tokens per owner or a memory's size now over its size then is a ratio of sums but not a
    rate: the exact interval for rates near 0 or 1 (whose domain is [0, 1]) never applies."""
    rng = np.random.default_rng(7)
    den = rng.integers(3, 9, size=14).astype(float)
    num = den * rng.uniform(1.02, 1.2, size=14)  # every owner's memory grew a little
    found = bootstrap(ratio_estimator(num, den))
    estimate = num.sum() / den.sum()
    assert found.method == "bootstrap"
    assert found.lo <= estimate <= found.hi and found.lo > 1.0
    tokens = bootstrap(ratio_estimator(rng.uniform(200, 300, size=14), np.ones(14)))
    assert tokens.method == "bootstrap" and 200 <= tokens.lo < tokens.hi <= 300
    # The same owners' rate near 1 still takes the exact interval.
    rate = bootstrap(ratio_estimator(den - (rng.uniform(size=14) < 0.05), den))
    assert rate.method == "clustered_exact"

"""The overfitting rule on hand-made numbers (docs/tune.md): flagged exactly when the train
gain is positive, the held-out verdict is not ``better`` and the gain exceeds the upper end of
the held-out interval, gains signed in the objective's direction."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import pandas as pd
import pytest

from memlab.reporting.compare.prompt_ab import ABResult
from memlab.reporting.tuning.tune_report import overfit
from memlab.reporting.tuning.tune_spec import Objective


@dataclass
class _Verdict:
    metric: str
    outcome: str


@dataclass
class _Heldout:
    table: pd.DataFrame
    verdicts: list[_Verdict] = field(default_factory=list)


def _heldout(metric: str, outcome: str, delta: float, lo: float, hi: float) -> ABResult:
    table = pd.DataFrame(
        [{"metric": metric, "role": "primary", "delta": delta, "delta_lo": lo, "delta_hi": hi}]
    )
    return cast(ABResult, _Heldout(table, [_Verdict(metric, outcome)]))


def _objective(metric: str) -> Objective:
    return Objective.model_validate({"metric": metric})


def _train(metric: str, start: float, best: float) -> dict[str, dict[str, Any]]:
    return {"start": {metric: start}, "best": {metric: best}}


def test_a_train_gain_above_the_held_out_interval_is_flagged() -> None:
    # recall 0.60 -> 0.75 on train: +0.15; held-out +0.02 [-0.03, 0.07]: at most +0.07.
    found = overfit(_objective("recall"), _train("recall", 0.60, 0.75),
                    _heldout("recall", "no difference", 0.02, -0.03, 0.07), True)  # fmt: skip
    assert found is not None
    assert found.train_gain == pytest.approx(0.15) and found.heldout_high == pytest.approx(0.07)
    assert found.text().startswith("overfit: better on train by +15.0 pts (recall)")


def test_a_gain_the_held_out_interval_allows_or_a_better_verdict_is_not_flagged() -> None:
    objective, train = _objective("recall"), _train("recall", 0.60, 0.75)
    inside = _heldout("recall", "inconclusive", 0.05, -0.04, 0.20)  # allows +0.20 >= +0.15
    assert overfit(objective, train, inside, True) is None
    better = _heldout("recall", "better", 0.08, 0.01, 0.10)
    assert overfit(objective, train, better, True) is None
    assert (
        overfit(objective, train, _heldout("recall", "no difference", 0, -0.01, 0.01), False)
        is None
    )
    worse_on_train = _train("recall", 0.75, 0.60)
    assert overfit(objective, worse_on_train, inside, True) is None


def test_a_rate_to_minimise_gains_when_it_drops() -> None:
    # parse failures 0.20 -> 0.05 on train: a gain of 0.15; held-out delta 0 [-0.02, +0.03]:
    # the gain (a drop) is at most 0.02.
    metric = "parse_failure_rate"
    found = overfit(_objective(metric), _train(metric, 0.20, 0.05),
                    _heldout(metric, "no difference", 0.0, -0.02, 0.03), True)  # fmt: skip
    assert found is not None
    assert found.train_gain == pytest.approx(0.15) and found.heldout_high == pytest.approx(0.02)
    assert "better on train by +15.0 pts (parse failure rate, lower is better)" in found.text()
    assert "allows at most +2.0 pts" in found.text()


def test_no_owner_changed_held_out_means_no_gain_there() -> None:
    nan = float("nan")
    found = overfit(_objective("recall"), _train("recall", 0.5, 0.6),
                    _heldout("recall", "inconclusive", 0.0, nan, nan), True)  # fmt: skip
    assert found is not None and found.heldout_high == 0.0

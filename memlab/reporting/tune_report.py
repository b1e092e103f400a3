"""What a search's result says beyond its verdicts: the overfitting flag and the report.

**Overfitting.** The winner of a search is *overfit* when, on the objective's metric, it
differs from the starting configuration, its gain over the start on the train owners is
positive, the held-out verdict is not ``better``, and the train gain exceeds the upper end of
the held-out interval of the gain (the paired interval of ``memlab ab``; when no held-out owner
changed, the held-out gain itself, zero). Gains are signed in the objective's direction (a drop
of a rate to minimise is a gain). Such a winner's train score came from the training owners,
not from the configuration: the held-out owners rule out a gain as large. :func:`overfit`
applies the rule; :class:`Overfit` states it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from memlab.reporting.prompt_ab import ABResult
from memlab.reporting.tune_spec import Objective
from memlab.scoring.metric_specs import metric_spec

__all__ = ["Overfit", "overfit"]


@dataclass(frozen=True)
class Overfit:
    """A winner better on train than the held-out owners allow (see the module docstring).

    Attributes:
        metric: The objective's metric.
        train_gain: The winner's gain over the start on the train owners (objective's sign).
        heldout_high: The upper end of the held-out interval of the same gain.
        verdict: The held-out verdict of the metric (never ``better``).
    """

    metric: str
    train_gain: float
    heldout_high: float
    verdict: str

    def text(self) -> str:
        """``overfit: better on train by +12.0 pts, no gain on held-out owners (...)``."""
        spec = metric_spec(self.metric)
        way = 1.0 if spec.higher_is_better else -1.0  # gains back in the metric's own sign
        return (
            f"overfit: better on train by {spec.fmt_delta(way * self.train_gain)} "
            f"({spec.title}), no gain on held-out owners (held-out verdict {self.verdict}; "
            f"its interval allows at most {spec.fmt_delta(way * self.heldout_high)})"
        )

    def as_json(self) -> dict[str, float | str]:
        """What ``tune.json`` keeps under ``overfit``."""
        return {
            "metric": self.metric,
            "train_gain": self.train_gain,
            "heldout_high": self.heldout_high,
            "verdict": self.verdict,
        }


def _heldout_high(heldout: ABResult, metric: str, higher_is_better: bool) -> float:
    """The upper end of the held-out gain's interval (objective's sign); NaN when unknown."""
    table = heldout.table
    rows = table[(table["metric"] == metric) & (table["role"] == "primary")]
    if rows.empty:
        return math.nan
    row = rows.iloc[0]
    bound = float(row["delta_hi"] if higher_is_better else row["delta_lo"])
    if math.isnan(bound):  # no interval (no owner changed): the difference itself
        bound = float(row["delta"])
    return bound if higher_is_better else -bound


def overfit(
    objective: Objective,
    train: Mapping[str, Mapping[str, float]],
    heldout: ABResult,
    changed: bool,
) -> Overfit | None:
    """The overfitting flag of a search (see the module docstring), or None.

    Args:
        objective: What the search improved.
        train: Primary metrics of ``start`` and ``best`` on the train owners.
        heldout: The paired comparison of start and winner on the held-out owners.
        changed: Whether the winner differs from the starting configuration.
    """
    metric = objective.metric
    start, best = train.get("start", {}), train.get("best", {})
    if not changed or metric not in start or metric not in best:
        return None
    sign = 1.0 if objective.higher_is_better else -1.0
    gain = sign * (float(best[metric]) - float(start[metric]))
    verdict = next((v.outcome for v in heldout.verdicts if v.metric == metric), "")
    high = _heldout_high(heldout, metric, objective.higher_is_better)
    if math.isnan(gain) or gain <= 0 or verdict in ("better", "") or math.isnan(high):
        return None
    return Overfit(metric, gain, high, verdict) if gain > high else None

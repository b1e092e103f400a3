"""A CI gate over a run: thresholds on headline metrics, checked for every configuration."""

from __future__ import annotations

import math
from dataclasses import dataclass

from memlab.eval.run import Run

__all__ = ["GateFailure", "Thresholds", "check_gate"]


@dataclass(frozen=True)
class Thresholds:
    """Limits a run must meet; ``None`` means not checked."""

    max_parse_failure: float | None = None
    min_recall: float | None = None
    min_precision: float | None = None
    max_duplicate_rate: float | None = None
    max_duplicate_rate_embedding: float | None = None
    max_retracted_held: int | None = None
    max_forbidden_stored: int | None = None


@dataclass(frozen=True)
class GateFailure:
    """One missed threshold for one configuration."""

    lane: str
    metric: str
    value: float
    limit: float
    bound: str  # "max" or "min"
    threshold: str = ""
    """The :class:`Thresholds` field that was missed (e.g. ``max_parse_failure``)."""
    detail: str = ""
    """Why the value is missing, when the run did not measure the metric."""

    def __str__(self) -> str:
        op = "<=" if self.bound == "max" else ">="
        shown = "NaN (not computable)" if math.isnan(self.value) else f"{self.value:.4g}"
        if self.detail:
            shown = self.detail
        flag = f" [--{self.threshold.replace('_', '-')}]" if self.threshold else ""
        return f"{self.lane}: {self.metric} = {shown}, required {op} {self.limit:g}{flag}"


# Metrics a run has only when it was swept with an optional measure, and how to get them.
_OPTIONAL = {
    "duplicate_rate_embedding": "not measured (sweep with --embedding-duplicates)",
}

_CHECKS: tuple[tuple[str, str, str], ...] = (
    ("max_parse_failure", "parse_failure_rate", "max"),
    ("min_recall", "recall", "min"),
    ("min_precision", "precision", "min"),
    ("max_duplicate_rate", "duplicate_rate", "max"),
    ("max_duplicate_rate_embedding", "duplicate_rate_embedding", "max"),
    ("max_retracted_held", "retracted_held", "max"),
    ("max_forbidden_stored", "forbidden_stored", "max"),
)


def check_gate(run: Run, thresholds: Thresholds) -> list[GateFailure]:
    """Return every missed threshold (empty when the run passes).

    A metric that cannot be computed (NaN: no replies, no labeled facts) misses any
    threshold set on it, so an empty run never passes a gate by accident.
    """
    failures: list[GateFailure] = []
    summary = run.summary
    for lane_id, row in summary.iterrows():
        for field, column, bound in _CHECKS:
            limit = getattr(thresholds, field)
            if limit is None:
                continue
            if column not in summary.columns:
                detail = _OPTIONAL.get(column, "not in the run summary")
                failures.append(
                    GateFailure(
                        run.label(str(lane_id)), column, math.nan, limit, bound, field, detail
                    )
                )
                continue
            value = float(row[column])
            missed = (
                math.isnan(value)
                or (bound == "max" and value > limit)
                or (bound == "min" and value < limit)
            )
            if missed:
                failures.append(
                    GateFailure(run.label(str(lane_id)), column, value, limit, bound, field)
                )
    return failures

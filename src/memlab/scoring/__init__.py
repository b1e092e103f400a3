"""Scoring: replays turned into numbers, each metric declared once, compared with statistics.

:mod:`~memlab.scoring.metric_specs` declares every per-owner count and every summary metric
built from them; :mod:`~memlab.scoring.metrics` computes the session rows, the per-owner
counts and the per-lane summary with bootstrap intervals (:mod:`~memlab.scoring.stats`);
:mod:`~memlab.scoring.comparison` compares lanes paired on their owners;
:mod:`~memlab.scoring.operations` scores each update as memory operations and
:mod:`~memlab.scoring.injection_audit` what reaches the next session's agent.

Names are imported on first use (see :mod:`memlab._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.scoring.comparison import CompareError, Lane, compare, compare_lanes, owner_deltas
    from memlab.scoring.injection_audit import POLICIES, audit_injection
    from memlab.scoring.metric_specs import METRIC_SPECS, MetricSpec, metric_spec
    from memlab.scoring.metrics import (
        failure_table,
        owner_counts,
        replay_rows,
        session_rows,
        summarize,
        violation_table,
    )
    from memlab.scoring.operations import score_operations
    from memlab.scoring.stats import StatOptions, StatsError

_EXPORTS: dict[str, str] = {
    "CompareError": "memlab.scoring.comparison",
    "Lane": "memlab.scoring.comparison",
    "compare": "memlab.scoring.comparison",
    "compare_lanes": "memlab.scoring.comparison",
    "owner_deltas": "memlab.scoring.comparison",
    "POLICIES": "memlab.scoring.injection_audit",
    "audit_injection": "memlab.scoring.injection_audit",
    "METRIC_SPECS": "memlab.scoring.metric_specs",
    "MetricSpec": "memlab.scoring.metric_specs",
    "metric_spec": "memlab.scoring.metric_specs",
    "failure_table": "memlab.scoring.metrics",
    "owner_counts": "memlab.scoring.metrics",
    "replay_rows": "memlab.scoring.metrics",
    "session_rows": "memlab.scoring.metrics",
    "summarize": "memlab.scoring.metrics",
    "violation_table": "memlab.scoring.metrics",
    "score_operations": "memlab.scoring.operations",
    "StatOptions": "memlab.scoring.stats",
    "StatsError": "memlab.scoring.stats",
}

__all__ = [
    "METRIC_SPECS",
    "POLICIES",
    "CompareError",
    "Lane",
    "MetricSpec",
    "StatOptions",
    "StatsError",
    "audit_injection",
    "compare",
    "compare_lanes",
    "failure_table",
    "metric_spec",
    "owner_counts",
    "owner_deltas",
    "replay_rows",
    "score_operations",
    "session_rows",
    "summarize",
    "violation_table",
]

__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)

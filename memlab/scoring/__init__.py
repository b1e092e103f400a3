"""Scoring: replays turned into numbers, each metric declared once, compared with statistics.

:mod:`~memlab.scoring.count_specs` declares every per-owner count and
:mod:`~memlab.scoring.metric_specs` every summary metric built from them;
:mod:`~memlab.scoring.metrics` computes the session rows, the per-owner
counts and the per-lane summary with bootstrap intervals (:mod:`~memlab.scoring.inference.stats`);
:mod:`~memlab.scoring.comparing.comparison` compares lanes paired on their owners;
:mod:`~memlab.scoring.operations` scores each update as memory operations and
:mod:`~memlab.scoring.qa.injection_audit` what reaches the next session's agent.

Names are imported on first use (see :mod:`memlab._lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.scoring.comparing.comparison import CompareError as CompareError
    from memlab.scoring.comparing.comparison import Lane as Lane
    from memlab.scoring.comparing.comparison import compare as compare
    from memlab.scoring.comparing.comparison import compare_lanes as compare_lanes
    from memlab.scoring.inference.stats import StatOptions as StatOptions
    from memlab.scoring.metric_model import MetricSpec as MetricSpec
    from memlab.scoring.metric_specs import metric_spec as metric_spec
    from memlab.scoring.metrics import failure_table as failure_table
    from memlab.scoring.metrics import owner_counts as owner_counts
    from memlab.scoring.metrics import replay_rows as replay_rows
    from memlab.scoring.metrics import summarize as summarize
    from memlab.scoring.metrics import violation_table as violation_table
    from memlab.scoring.qa.injection_audit import audit_injection as audit_injection
else:  # at run time: each name is imported on first use
    __getattr__, __dir__ = lazy_face(__name__)

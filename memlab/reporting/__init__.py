"""Charts, comparison reports, prompt trials, prompt A/B tests and the CI gate.

Names are imported on first use (see :mod:`memlab._lazy`): the gate's thresholds load without
matplotlib, the charts with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.reporting.chart_tables import chart_numbers as chart_numbers
    from memlab.reporting.charts import parse_failure_chart as parse_failure_chart
    from memlab.reporting.gate import Regression as Regression
    from memlab.reporting.gate import ThresholdError as ThresholdError
    from memlab.reporting.gate import Thresholds as Thresholds
    from memlab.reporting.gate import check_gate as check_gate
    from memlab.reporting.gate import check_regressions as check_regressions
    from memlab.reporting.overlay import Overlay as Overlay
    from memlab.reporting.prompt_ab import ABResult as ABResult
    from memlab.reporting.prompt_ab import MetricVerdict as MetricVerdict
    from memlab.reporting.prompt_ab import ab as ab
    from memlab.reporting.report import ReportPaths as ReportPaths
    from memlab.reporting.report import build_report as build_report
    from memlab.reporting.trial import try_prompt as try_prompt
else:  # at run time: each name is imported on first use
    __getattr__, __dir__ = lazy_face(__name__)

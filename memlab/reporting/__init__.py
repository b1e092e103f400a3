"""Charts, comparison reports, prompt trials, prompt A/B tests and the CI gate.

Names are imported on first use (see :mod:`memlab._lazy`): the gate's thresholds load without
matplotlib, the charts with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.reporting.compare.gate import Regression as Regression
    from memlab.reporting.compare.gate import ThresholdError as ThresholdError
    from memlab.reporting.compare.gate import Thresholds as Thresholds
    from memlab.reporting.compare.gate import check_gate as check_gate
    from memlab.reporting.compare.gate import check_regressions as check_regressions
    from memlab.reporting.compare.prompt_ab import ABResult as ABResult
    from memlab.reporting.compare.prompt_ab import MetricVerdict as MetricVerdict
    from memlab.reporting.compare.prompt_ab import ab as ab
    from memlab.reporting.compare.trial import try_prompt as try_prompt
    from memlab.reporting.figures.chart_tables import chart_numbers as chart_numbers
    from memlab.reporting.figures.charts import parse_failure_chart as parse_failure_chart
    from memlab.reporting.figures.overlay import Overlay as Overlay
    from memlab.reporting.report import ReportPaths as ReportPaths
    from memlab.reporting.report import build_report as build_report
else:  # at run time: each name is imported on first use
    __getattr__, __dir__ = lazy_face(__name__)

"""Charts, comparison reports, prompt trials, prompt A/B tests and the CI gate.

Names are imported on first use (see :mod:`memlab._lazy`): the gate's thresholds load without
matplotlib, the charts with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlab._lazy import lazy_face

if TYPE_CHECKING:
    from memlab.reporting.chart_tables import chart_numbers
    from memlab.reporting.charts import (
        duplication_chart,
        fact_growth_chart,
        operating_curve_chart,
        parse_failure_chart,
        tokens_chart,
        violation_heatmap,
    )
    from memlab.reporting.gate import (
        GateFailure,
        Regression,
        ThresholdError,
        Thresholds,
        check_gate,
        check_regressions,
    )
    from memlab.reporting.overlay import Overlay
    from memlab.reporting.prompt_ab import ABResult, MetricVerdict, ab
    from memlab.reporting.report import (
        ReportPaths,
        build_report,
        figure_to_data_uri,
    )
    from memlab.reporting.tables import (
        Metric,
        compare_table,
        config_table,
        fact_diff,
        metrics_in,
        worst_failures,
    )
    from memlab.reporting.trial import PromptTrial, TrialError, try_prompt

_EXPORTS: dict[str, str] = {
    "Overlay": "memlab.reporting.overlay",
    "ABResult": "memlab.reporting.prompt_ab",
    "MetricVerdict": "memlab.reporting.prompt_ab",
    "ab": "memlab.reporting.prompt_ab",
    "chart_numbers": "memlab.reporting.chart_tables",
    "duplication_chart": "memlab.reporting.charts",
    "fact_growth_chart": "memlab.reporting.charts",
    "operating_curve_chart": "memlab.reporting.charts",
    "parse_failure_chart": "memlab.reporting.charts",
    "tokens_chart": "memlab.reporting.charts",
    "violation_heatmap": "memlab.reporting.charts",
    "GateFailure": "memlab.reporting.gate",
    "Regression": "memlab.reporting.gate",
    "ThresholdError": "memlab.reporting.gate",
    "Thresholds": "memlab.reporting.gate",
    "check_gate": "memlab.reporting.gate",
    "check_regressions": "memlab.reporting.gate",
    "ReportPaths": "memlab.reporting.report",
    "build_report": "memlab.reporting.report",
    "figure_to_data_uri": "memlab.reporting.report",
    "Metric": "memlab.reporting.tables",
    "compare_table": "memlab.reporting.tables",
    "config_table": "memlab.reporting.tables",
    "fact_diff": "memlab.reporting.tables",
    "metrics_in": "memlab.reporting.tables",
    "worst_failures": "memlab.reporting.tables",
    "PromptTrial": "memlab.reporting.trial",
    "TrialError": "memlab.reporting.trial",
    "try_prompt": "memlab.reporting.trial",
}


__all__ = [
    "ABResult",
    "GateFailure",
    "Metric",
    "MetricVerdict",
    "Overlay",
    "PromptTrial",
    "Regression",
    "ReportPaths",
    "ThresholdError",
    "Thresholds",
    "TrialError",
    "ab",
    "build_report",
    "chart_numbers",
    "check_gate",
    "check_regressions",
    "compare_table",
    "config_table",
    "duplication_chart",
    "fact_diff",
    "fact_growth_chart",
    "figure_to_data_uri",
    "metrics_in",
    "operating_curve_chart",
    "parse_failure_chart",
    "tokens_chart",
    "try_prompt",
    "violation_heatmap",
    "worst_failures",
]

__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)

"""Charts, comparison reports and the CI gate."""

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
from memlab.reporting.report import (
    ReportPaths,
    build_report,
    figure_to_data_uri,
)
from memlab.reporting.tables import (
    METRICS,
    Metric,
    compare_table,
    config_table,
    fact_diff,
    metrics_in,
    worst_failures,
)
from memlab.reporting.trial import PromptTrial, TrialError, try_prompt

__all__ = [
    "METRICS",
    "GateFailure",
    "Metric",
    "PromptTrial",
    "Regression",
    "ReportPaths",
    "ThresholdError",
    "Thresholds",
    "TrialError",
    "build_report",
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

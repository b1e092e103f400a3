"""A run in a notebook: its headline metrics, what the sweep reused, and the key charts."""

from __future__ import annotations

from html import escape

from memlab.reporting.charts import fact_growth_chart, parse_failure_chart
from memlab.reporting.report import figure_to_data_uri
from memlab.sweeps.run import Run

__all__ = ["DISPLAY_COLUMNS", "run_html"]

DISPLAY_COLUMNS = (
    "label",
    "llm_calls",
    "parse_failure_rate",
    "final_facts",
    "recall",
    "precision",
    "duplicate_rate",
    "backend_errors",
)
"""The summary columns a run shows in a notebook."""


def run_html(run: Run) -> str:
    """HTML of ``run``: summary table, lane status (reused / replayed, why) and two charts."""
    columns = [c for c in DISPLAY_COLUMNS if c in run.summary.columns]
    parts = [
        f"<h4>Run {escape(run.name)}: {len(run.lanes)} lane(s)"
        f"{'' if run.complete else ' (incomplete: some replays had backend errors)'}</h4>",
        run.summary[columns].to_html(float_format=lambda v: f"{v:.3g}"),
    ]
    if not run.lane_status.empty:
        parts.append(run.lane_status[["label", "reused", "replayed", "why"]].to_html())
    for chart in (parse_failure_chart, fact_growth_chart):
        figure = chart(run)
        parts.append(f'<img src="{figure_to_data_uri(figure)}" style="max-width:48%">')
    return "".join(parts)

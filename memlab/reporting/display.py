"""A run in a notebook: its headline metrics, what the sweep reused, and the key charts."""

from __future__ import annotations

from html import escape

import pandas as pd

from memlab.reporting.echoes import echo_lines
from memlab.reporting.figures.charts import fact_growth_chart, parse_failure_chart
from memlab.reporting.report_render import figure_to_data_uri
from memlab.runs.run import Run

__all__ = ["DISPLAY_COLUMNS", "call_lines", "run_html"]

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


def _count(row: pd.Series, column: str) -> int:
    value = row.get(column, 0)
    return 0 if pd.isna(value) else int(value)


def call_lines(run: Run) -> list[str]:
    """What the run asked of models, in words: the total (``24 model calls, 112 from cache``),
    one line per lane with replies that did not parse (expected outcomes, counted here
    instead of logged one by one; ``-v`` logs each) and one per lane whose replies echo the
    prompt's own text (:func:`memlab.reporting.echoes.echo_lines`)."""
    totals = dict.fromkeys(("model_calls", "cache_hits", "simulated_calls"), 0)
    for _, row in run.summary.iterrows():
        for column in totals:
            totals[column] += _count(row, column)
    head = f"{totals['model_calls']} model calls, {totals['cache_hits']} from cache"
    if totals["simulated_calls"]:
        head += f", {totals['simulated_calls']} simulated (no model asked)"
    lines = [head]
    calls = run.calls
    if calls.empty:
        return lines
    replied = calls[calls["reply"].notna()]
    for lane_id, lane_calls in replied.groupby("lane_id", sort=False):
        failed = int((~lane_calls["parse_ok"].astype(bool)).sum())
        if failed and str(lane_id) in run.lanes:
            lines.append(
                f"{run.label(str(lane_id))}: {failed} of {len(lane_calls)} replies did not "
                "parse (counted in the tables; -v logs each)"
            )
    return [*lines, *echo_lines(run)]

"""The numbers each chart of :mod:`memlab.reporting.figures.charts` draws, as a table of text.

A picture cannot be searched, copied or checked by a notebook test: the report shows these
tables under its charts, and notebooks print them. One function per chart, reading the same
run tables the chart reads; :func:`chart_numbers` finds the one for a chart.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
from matplotlib.figure import Figure

from memlab.reporting.figures import charts
from memlab.runs.run import Run
from memlab.scoring.metric_specs import metric_spec

__all__ = ["chart_numbers"]


def _rates(run: Run, columns: list[str]) -> pd.DataFrame:
    """Per configuration: each rate of ``columns`` the run has, with its 95% interval."""
    summary = run.summary
    rows = []
    for lane_id, row in summary.iterrows():
        cells = {"configuration": run.label(str(lane_id))}
        for column in columns:
            if column not in summary.columns:
                continue
            spec = metric_spec(column)
            text = spec.fmt(row[column])
            lo, hi = row.get(f"{column}_lo"), row.get(f"{column}_hi")
            if text != "-" and pd.notna(lo) and pd.notna(hi):
                text += " " + spec.fmt_bounds(float(lo), float(hi))
            cells[spec.title] = text
        rows.append(cells)
    return pd.DataFrame(rows)


def _parse(run: Run) -> pd.DataFrame:
    counts = run.failures.rename(index=run.label).reset_index(names="configuration")
    rates = _rates(run, ["parse_failure_rate"])
    return counts.merge(rates, on="configuration") if not counts.empty else counts


def _violations(run: Run) -> pd.DataFrame:
    table = run.violations
    if table.empty:
        return table
    shown = table.assign(configuration=[run.label(str(x)) for x in table["lane_id"]])
    return shown[["configuration", "pointer", "keyword", "count"]]


def _growth(run: Run) -> pd.DataFrame:
    sessions = run.sessions
    if sessions.empty:
        return pd.DataFrame()
    means = sessions.groupby(["lane_id", "session_index"], sort=False)["facts"].mean()
    table = means.round(2).reset_index(name="stored facts (mean per owner)")
    table.insert(0, "configuration", [run.label(str(x)) for x in table.pop("lane_id")])
    return table.rename(columns={"session_index": "session (from 0)"})


def _regret(run: Run) -> pd.DataFrame:
    rates = _rates(run, ["eviction_regret"])
    events = run.sessions.groupby("lane_id")[["gold_evicted", "gold_below_threshold"]].sum()
    events.index = [run.label(str(x)) for x in events.index]
    counted = events.rename(columns={"gold_evicted": "cap", "gold_below_threshold": "thr"})
    return rates.merge(counted, left_on="configuration", right_index=True, how="left")


def _duplication(run: Run) -> pd.DataFrame:
    kinds = ("dup_exact", "dup_normalized", "dup_near", "dup_embedding")
    summary = run.summary
    table = summary[["final_facts", *(k for k in kinds if k in summary.columns)]].copy()
    table.index = [run.label(str(x)) for x in table.index]
    return table.reset_index(names="configuration")


def _tokens(run: Run) -> pd.DataFrame:
    calls = run.calls
    if calls.empty:
        return pd.DataFrame()
    means = calls.groupby("lane_id")[["prompt_tokens", "completion_tokens"]].mean().round(1)
    means.index = [run.label(str(x)) for x in means.index]
    return means.reset_index(names="configuration")


_NUMBERS: dict[Callable[[Run], Figure], Callable[[Run], pd.DataFrame]] = {
    charts.parse_failure_chart: _parse,
    charts.violation_heatmap: _violations,
    charts.fact_growth_chart: _growth,
    charts.eviction_regret_chart: _regret,
    charts.duplication_chart: _duplication,
    charts.operating_curve_chart: lambda run: _rates(run, ["precision", "recall"]),
    charts.stale_survival_chart: lambda run: _rates(run, ["stale_rmst"]),
    charts.injection_coverage_chart: lambda run: _rates(run, ["injected_gold_coverage"]),
    charts.tokens_chart: _tokens,
}


def chart_numbers(chart: Callable[[Run], Figure], run: Run) -> pd.DataFrame:
    """The numbers ``chart`` draws for ``run`` (an empty frame for a chart not listed)."""
    numbers = _NUMBERS.get(chart)
    return numbers(run) if numbers is not None else pd.DataFrame()

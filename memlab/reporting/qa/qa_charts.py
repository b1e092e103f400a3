"""Charts of a run's memory QA. Every function returns a :class:`matplotlib.figure.Figure`
drawn from a table of :mod:`memlab.scoring.qa.qa_metrics`; in a notebook, print that table
beside the chart (nbval compares text, not images).
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from memlab.reporting.figures.charts import empty_chart, legend, palette
from memlab.runs.run import Run
from memlab.scoring.qa.qa_causes import CAUSE_TITLES, CAUSES
from memlab.scoring.qa.qa_metrics import accuracy_table, cause_table, judge_band

__all__ = ["qa_accuracy_chart", "qa_causes_chart", "qa_judge_band_chart"]

_NO_QA = "no memory QA in this run (memlab qa RUN)"


def qa_accuracy_chart(run: Run) -> Figure:
    """Accuracy of the headline questions per configuration and condition under the run's
    judge (:attr:`~memlab.runs.run.Run.judge`), with 95% intervals over owners.

    Numbers: ``accuracy_table(run.qa_answers, judges=[run.judge])``.
    """
    fig = Figure(figsize=(8, 1.2 + 0.9 * max(1, len(run.lanes))), layout="constrained")
    answers = run.qa_answers
    if answers.empty:
        return empty_chart(fig, _NO_QA)
    table = accuracy_table(answers, judges=[run.judge], options=run.stats)
    conditions = list(dict.fromkeys(table["condition"]))
    lanes = [lane for lane in run.lanes if lane in set(table["lane_id"])]
    ax = fig.subplots()
    height = 0.8 / max(1, len(conditions))
    for k, (condition, color) in enumerate(zip(conditions, palette(len(conditions)), strict=True)):
        rows = table[table["condition"] == condition].set_index("lane_id").reindex(lanes)
        y = np.arange(len(lanes)) + k * height
        values = rows["accuracy"].to_numpy(dtype=float)
        ax.barh(y, values, height=height, color=color, label=condition)
        lo, hi = (
            rows["accuracy_lo"].to_numpy(dtype=float),
            rows["accuracy_hi"].to_numpy(dtype=float),
        )
        known = np.isfinite(lo) & np.isfinite(hi)
        spans = np.vstack([np.maximum(values - lo, 0), np.maximum(hi - values, 0)])[:, known]
        ax.errorbar(values[known], y[known], xerr=spans, fmt="none", ecolor="#222", capsize=2)
    ax.set_yticks(np.arange(len(lanes)) + 0.4 - height / 2, [run.label(lane) for lane in lanes])
    ax.set_xlim(0, 1)
    ax.set_xlabel(f"accuracy under the {run.judge} judge (bars: 95% interval over owners)")
    ax.set_title("Memory QA: answerable questions per condition")
    legend(ax, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7)
    return fig


def qa_judge_band_chart(run: Run) -> Figure:
    """The judge band per configuration and condition: the accuracy under each judge (one
    marker per judge) joined by a line from the lowest to the highest.

    Numbers: ``judge_band(run.qa_answers)``.
    """
    fig = Figure(figsize=(8, 1.4 + 0.35 * 4 * max(1, len(run.lanes))), layout="constrained")
    answers = run.qa_answers
    if answers.empty:
        return empty_chart(fig, _NO_QA)
    band = judge_band(answers, options=run.stats)
    if band.empty:  # e.g. procedure questions only: nothing a judge graded
        return empty_chart(fig, "no answerable question was judged in this run")
    judges = [c.split(":", 1)[1] for c in band.columns if c.startswith("accuracy:")]
    ax = fig.subplots()
    y = np.arange(len(band))
    ax.hlines(y, band["band_lo"], band["band_hi"], color="#888", linewidth=3, alpha=0.6)
    for judge, color in zip(judges, palette(len(judges)), strict=True):
        ax.plot(band[f"accuracy:{judge}"], y, "o", color=color, label=judge)
    labels = [
        f"{run.label(lane)} / {cond}"
        for lane, cond in zip(band["lane_id"], band["condition"], strict=True)
    ]
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("accuracy of answerable questions under each judge")
    ax.set_title("Judge band: the same answers under each judge prompt")
    legend(ax, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7)
    return fig


def qa_causes_chart(run: Run) -> Figure:
    """Why answers from memory are wrong: per configuration, the wrong answers to answerable
    questions stacked by cause, under the run's judge.

    Numbers: ``cause_table(run.qa_answers, run.judge)``.
    """
    fig = Figure(figsize=(8, 1.4 + 0.6 * max(1, len(run.lanes))), layout="constrained")
    answers = run.qa_answers
    if answers.empty:
        return empty_chart(fig, _NO_QA)
    table = cause_table(answers, run.judge).set_index("lane_id")
    lanes = [lane for lane in run.lanes if lane in table.index]
    ax = fig.subplots()
    y = np.arange(len(lanes))
    left = np.zeros(len(lanes))
    for cause, color in zip(CAUSES, palette(len(CAUSES)), strict=True):
        values = table.loc[lanes, cause].to_numpy(dtype=float)
        if values.any():
            ax.barh(y, values, left=left, color=color, label=CAUSE_TITLES[cause])
        left += values
    totals = table.loc[lanes, ["wrong", "answered"]].to_numpy(dtype=int)
    for i, (wrong, answered) in enumerate(totals):
        ax.text(left[i], i, f" {wrong} of {answered}", va="center", fontsize=8)
    ax.set_yticks(y, [run.label(lane) for lane in lanes])
    ax.set_xlabel(f"wrong answers from memory under the {run.judge} judge")
    ax.set_title("Why each wrong answer is wrong")
    legend(ax, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7)
    return fig

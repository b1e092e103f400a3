"""The forgetting operating curve: per tiered configuration (decay, deletion threshold, recall
restarting decay or not), the share of labelled answers its memory still gives after later
sessions against the memory's size (:mod:`memlab.scoring.retention`).

:func:`forgetting_curve_numbers` is the table (what the chart draws; notebooks print it),
:func:`forgetting_curve_chart` the curve (a Figure) and :func:`forgetting_curve_markdown` the
section's Markdown. The reference is the configuration at the seed's values (5% a day, delete
below 0.1, recall restarts decay): :func:`seed_lane`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from memlab.backends.caching.cache import CacheMode
from memlab.backends.remote.rate_limit import RateLimit
from memlab.grids.qa_spec import QAError
from memlab.memory.storage.items import ForgettingRules
from memlab.memory.tiers.tiered import lane_settings
from memlab.postrun.consolidation import memory_sizes
from memlab.postrun.forgetting_file import SavedForgetting, forgetting_rows, save_forgetting
from memlab.postrun.qa_step import QAOptions
from memlab.postrun.retention import ask_retention, run_retention
from memlab.reporting.figures.charts import empty_chart, legend
from memlab.reporting.markdown import md_escape
from memlab.reporting.statistics import titled_tables_markdown
from memlab.runs.run import Run
from memlab.scoring.inference.coverage import too_few_text
from memlab.scoring.retention import (
    COUNT_COLUMNS,
    compare_retention,
    retention_counts,
    retention_table_of_counts,
)

__all__ = [
    "INTRO",
    "ForgettingCurve",
    "forgetting_curve",
    "forgetting_curve_chart",
    "forgetting_curve_markdown",
    "forgetting_curve_numbers",
    "run_forgetting",
    "saved_curve",
    "seed_lane",
]

INTRO = (
    "The forgetting operating curve: every answerable question is asked of each "
    "configuration's memory after every session that follows the one where its evidence was "
    "stated (same injection path, prompts, judge and cache). Retained: the share answered "
    "correctly, with its 95% interval over owners. Memory: cl100k tokens of the stored facts "
    "and summaries per owner, averaged over the sessions. vs seed: the retained interval lies "
    "wholly above or below the seed default's (5%/day, delete below 0.1, recall restarts "
    "decay), or overlaps it. Selected: retained not below the seed default's and a smaller "
    "memory. Frontier: no other configuration retains more with a memory no larger."
)


def seed_lane(run: Run) -> str | None:
    """The tiered lane at the seed's forgetting values (the first, if several), else None."""
    for lane_id, config in run.lanes.items():
        if getattr(config, "memory", None) != "tiered":
            continue
        settings = lane_settings(config.settings())
        if settings.rules == ForgettingRules() and settings.recall_refreshes:
            return str(lane_id)
    return None


@dataclass(frozen=True)
class ForgettingCurve:
    """One run's curve: :func:`~memlab.scoring.retention.compare_retention` of its lanes
    (``table``) against the seed default's lane (``reference``)."""

    run: Run
    table: pd.DataFrame
    reference: str


def forgetting_curve(
    run: Run,
    answers: pd.DataFrame | None = None,
    *,
    cache_dir: str | Path | None = None,
    cache_mode: CacheMode = CacheMode.READ_WRITE,
    max_workers: int = 8,
    save: bool = True,
    max_cost: float | None = None,
    rate_limit: RateLimit | None = None,
) -> ForgettingCurve:
    """The curve of ``run``'s tiered lanes; ``answers``: its
    :func:`~memlab.postrun.retention.ask_retention` rows, asked (with the cache, workers,
    cost limit and pace given) when not given. ``save``: keep its counts in the run directory
    (:mod:`memlab.postrun.forgetting_file`), where ``memlab report`` reads them.

    Raises:
        QAError: No lane of the run is at the seed's forgetting values (a ``ValueError``).
        CostLimitError: A call could pass ``max_cost``: nothing is kept (a curve kept before
            stays as it was); asking again resumes from the response cache.
    """
    reference = _reference(run)
    if answers is None:
        answers = ask_retention(
            run,
            cache_dir=cache_dir,
            cache_mode=cache_mode,
            max_workers=max_workers,
            max_cost=max_cost,
            rate_limit=rate_limit,
        )
    return _curve(run, answers, reference, save)


def run_forgetting(run: Run, options: QAOptions, *, save: bool = True) -> ForgettingCurve:
    """:func:`forgetting_curve` asked with the QA step's
    :class:`~memlab.postrun.qa_step.QAOptions` (``memlab qa --forgetting`` counts both
    against one cost limit and paces both alike)."""
    reference = _reference(run)
    return _curve(run, run_retention(run, options), reference, save)


def _reference(run: Run) -> str:
    """:func:`seed_lane`, which the curve needs."""
    reference = seed_lane(run)
    if reference is None:
        raise QAError(
            f"{run.path}: no tiered lane at the seed's forgetting values to compare with; "
            "add one (tiered: {}) to the grid"
        )
    return reference


def _curve(run: Run, answers: pd.DataFrame, reference: str, save: bool) -> ForgettingCurve:
    """The curve of ``answers`` against the ``reference`` lane, kept when ``save``."""
    sizes = memory_sizes(run)
    tiered = [lane for lane, c in run.lanes.items() if getattr(c, "memory", None) == "tiered"]
    sizes = sizes[sizes["lane_id"].isin(tiered)]
    answers = answers[answers["lane_id"].isin(tiered)] if len(answers) else answers
    rows = forgetting_rows(retention_counts(answers, run.judge), sizes)
    if save:
        save_forgetting(run, rows, reference)
    return saved_curve(run, SavedForgetting(rows, reference, run.judge))


def saved_curve(run: Run, saved: SavedForgetting) -> ForgettingCurve:
    """The curve of ``run`` from its kept counts (:func:`~memlab.postrun.forgetting_file.
    read_forgetting`)."""
    rows = saved.rows
    counts = rows[list(COUNT_COLUMNS)]
    table = retention_table_of_counts(counts, rows, options=run.stats)
    return ForgettingCurve(run, compare_retention(table, saved.reference), saved.reference)


def _interval(value: float, lo: float, hi: float, owners: int, percent: bool) -> str:
    if math.isnan(value):
        return "-"
    shown = f"{value:.1%}" if percent else f"{value:.0f}"
    if math.isnan(lo) or math.isnan(hi):
        return f"{shown} ({too_few_text(owners)})"
    bounds = f"[{lo * 100:.1f}, {hi * 100:.1f}]" if percent else f"[{lo:.0f}, {hi:.0f}]"
    return f"{shown} {bounds}"


def forgetting_curve_numbers(curve: ForgettingCurve) -> pd.DataFrame:
    """One row per configuration: its forgetting settings, retained share and memory size
    with their intervals, and how it compares with the seed default (module docstring)."""
    rows = []
    for row in curve.table.to_dict("records"):
        settings = lane_settings(curve.run.lanes[row["lane_id"]].settings())
        owners = int(row["owners"])
        rows.append(
            {
                "configuration": curve.run.label(str(row["lane_id"])),
                "decay/day": f"{settings.rules.decay_per_day:g}",
                "delete below": f"{settings.rules.delete_below:g}",
                "recall restarts decay": "yes" if settings.recall_refreshes else "no",
                "asked": f"{row['asked']:g}",
                "retained": _interval(
                    row["retained"], row["retained_lo"], row["retained_hi"], owners, True
                ),
                "memory tokens / owner": _interval(
                    row["memory_tokens"],
                    row["memory_tokens_lo"],
                    row["memory_tokens_hi"],
                    owners,
                    False,
                ),
                "vs seed": row["vs_reference"],
                "selected": "yes" if row["selected"] else "no",
                "frontier": "yes" if row["frontier"] else "no",
            }
        )
    return pd.DataFrame(rows)


def forgetting_curve_chart(curve: ForgettingCurve) -> Figure:
    """Retained share (with 95% intervals) against memory size, one point per configuration;
    the frontier joined by a line, the seed default ringed, selected ones filled.

    Numbers: :func:`forgetting_curve_numbers`.
    """
    fig = Figure(figsize=(8, 5), layout="constrained")
    table = curve.table[np.isfinite(curve.table["retained"].to_numpy(dtype=float))]
    if table.empty:
        return empty_chart(fig, "no answers asked again")
    ax = fig.subplots()
    x = table["memory_tokens"].to_numpy(dtype=float)
    y = table["retained"].to_numpy(dtype=float)
    lo, hi = table["retained_lo"].to_numpy(float), table["retained_hi"].to_numpy(float)
    bars = np.isfinite(lo) & np.isfinite(hi)
    ax.errorbar(
        x[bars],
        y[bars],
        yerr=np.vstack([y - lo, hi - y])[:, bars],
        fmt="none",
        ecolor="#999",
        capsize=3,
    )
    chosen = table["selected"].to_numpy(dtype=bool)
    ax.plot(x[~chosen], y[~chosen], "o", mfc="white", color="#1f77b4", label="configuration")
    ax.plot(x[chosen], y[chosen], "o", color="#2ca02c", label="selected")
    edge = table["frontier"].to_numpy(dtype=bool)
    order = np.argsort(x[edge], kind="stable")
    ax.plot(x[edge][order], y[edge][order], "-", color="#2ca02c", alpha=0.6, label="frontier")
    seed = (table["lane_id"] == curve.reference).to_numpy()
    ax.plot(x[seed], y[seed], "o", ms=14, mfc="none", color="#d62728", label="seed default")
    ax.set_xlabel("memory tokens / owner (mean over sessions)")
    ax.set_ylabel("labelled answers retained")
    ax.set_ylim(-0.05, 1.05)
    ax.set_title("Forgetting operating curve: retained answers against memory size")
    legend(ax, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7)
    return fig


def forgetting_curve_markdown(curve: ForgettingCurve) -> list[str]:
    """Markdown lines of the section: the intro and the table."""
    lines = ["## Forgetting operating curve", "", md_escape(INTRO), ""]
    lines += titled_tables_markdown(
        [("Retained answers and memory size per configuration", forgetting_curve_numbers(curve))]
    )
    return [*lines, ""]

"""The report's forgetting section: each run's forgetting operating curve as it was kept in
the run directory (:mod:`memlab.postrun.forgetting_file`), never asked again by the report.

A run shows the section when it kept a curve; one whose curve cannot be used is left out
with one warning. Per run: the table of :func:`~memlab.reporting.figures.forgetting_curve.
forgetting_curve_numbers` (the numbers the chart draws, as text) and the chart.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

from matplotlib.figure import Figure

from memlab.postrun.forgetting_file import read_forgetting
from memlab.reporting.figures.charts import empty_reason
from memlab.reporting.figures.forgetting_curve import (
    INTRO,
    ForgettingCurve,
    forgetting_curve_chart,
    forgetting_curve_numbers,
    saved_curve,
)
from memlab.reporting.markdown import md_escape
from memlab.reporting.statistics import html_table, titled_tables_html, titled_tables_markdown
from memlab.runs.run import Run

__all__ = [
    "CHART_TITLE",
    "ForgettingSection",
    "forgetting_html",
    "forgetting_markdown",
    "forgetting_section",
]

CHART_TITLE = "Forgetting operating curve: retained answers against memory size"


@dataclass(frozen=True)
class ForgettingSection:
    """The curves of the runs that kept one, in the report's run order."""

    curves: list[ForgettingCurve]


def forgetting_section(runs: Sequence[Run]) -> ForgettingSection | None:
    """The section of the runs that kept a usable curve; ``None`` when none did."""
    curves = []
    for run in runs:
        saved = read_forgetting(run)
        if saved is not None:
            curves.append(saved_curve(run, saved))
    return ForgettingSection(curves) if curves else None


def _title(curve: ForgettingCurve) -> str:
    reference = curve.run.label(curve.reference)
    return f"{curve.run.name}: retained answers and memory size (seed default: {reference})"


def forgetting_markdown(section: ForgettingSection | None) -> list[str]:
    """Markdown lines of the section (none without one)."""
    if section is None:
        return []
    lines = ["## Forgetting operating curve", "", md_escape(INTRO), ""]
    tables = [(md_escape(_title(c)), forgetting_curve_numbers(c)) for c in section.curves]
    return [*lines, *titled_tables_markdown(tables), ""]


def forgetting_html(section: ForgettingSection | None, image: Callable[[Figure], str]) -> list[str]:
    """HTML parts of the section: per run its table, then its chart with the chart's numbers
    folded under it (``image`` turns a Figure into a URI)."""
    if section is None:
        return []
    parts = [f"<p class='muted'>{escape(INTRO)}</p>"]
    for curve in section.curves:
        numbers = forgetting_curve_numbers(curve)
        parts += titled_tables_html([(_title(curve), numbers)])
        fig = forgetting_curve_chart(curve)
        reason = empty_reason(fig)
        if reason is not None:
            parts.append(f"<p class='muted'>Not drawn: {escape(reason)}.</p>")
            continue
        parts.append(
            f"<figure><img alt='{escape(CHART_TITLE)}' src='{image(fig)}'>"
            f"<details><summary>{escape(CHART_TITLE)}: the numbers</summary>"
            f"{html_table(numbers)}</details></figure>"
        )
    return parts

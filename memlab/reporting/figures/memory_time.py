"""The reports' memory-over-time section: the consolidation curve, memory size over virtual
time and what forgetting did.

Per run (:mod:`memlab.postrun.consolidation`, :mod:`memlab.scoring.consolidation`,
:mod:`memlab.scoring.forgetting`):

- the curve, one row per configuration and session: the memory's size in tokens per owner,
  the questions asked again after the session (those answered correctly before), the share
  still answered correctly, the memory's size against when they were answered, each with its
  95% interval over owners, the reference (the same questions asked again right away) and the
  collapse flag (retained significantly below the reference, max-T step-down over the curve,
  and the memory smaller); a curve asked without the reference says so instead of flagging;
- forgetting per configuration: events by kind, the memories they removed and the gold facts
  each kind lost (``n/a`` for a configuration whose memory does not forget, never 0).

Each chart returns a Figure; :func:`curve_numbers` and :func:`forgetting_numbers` are the
numbers they draw (the report folds them under the charts, notebooks print them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from memlab.grids.qa_spec import QAError
from memlab.memory.designs import DEFAULT_DESIGN, MEMORY_DESIGNS
from memlab.postrun.consolidation import curve, curve_answers, forgetting_table
from memlab.reporting.figures.charts import empty_chart, empty_reason, legend, palette
from memlab.reporting.markdown import md_escape
from memlab.reporting.statistics import (
    html_table,
    stacked,
    titled_tables_html,
    titled_tables_markdown,
)
from memlab.runs.run import Run
from memlab.scoring.consolidation import shown_bounds
from memlab.scoring.forgetting import FORGETTING_KINDS

__all__ = [
    "MEMORY_TIME_CHARTS",
    "MemoryTimeSection",
    "RunTables",
    "consolidation_chart",
    "curve_numbers",
    "forgetting_chart",
    "forgetting_numbers",
    "memory_time_html",
    "memory_time_markdown",
    "memory_time_section",
]

INTRO = (
    "The consolidation curve: every answerable question a configuration answered correctly "
    "from its memory is asked again of the memory after each later session (same injection "
    "path, prompts, judge and cache). Retained: the share still answered correctly. Size "
    "since answered: the memory's size then over its size when the question was answered. "
    "Reference: the same questions asked again right away of the memory they were answered "
    "from (a fresh call), measuring answer and judge noise. Collapse: retained significantly "
    "below the reference (one-sided permutation test, each owner's reference and later "
    "answers permuted together, Westfall-Young max-T step-down over the curve's sessions at "
    "4%: at most a 4% chance of a false flag anywhere on a curve that forgot nothing) and "
    "size below 1 over the whole interval. Memory size: cl100k tokens "
    "of the stored facts and summaries per owner. Forgetting regret: gold facts a "
    "forgetting event removed the last memory of (the run's matcher decides)."
)
NOT_APPLICABLE = "n/a"
NO_REFERENCE = "no reference"


def _pct(value: float, lo: float, hi: float) -> str:
    if math.isnan(value):
        return "-"
    return f"{value:.1%} {shown_bounds('retained', lo, hi)}"


def _flag(collapse: bool, retained: float, reference: float) -> str:
    """The collapse column: no flag where nothing was re-asked, none without a reference."""
    if collapse:
        return "COLLAPSE"
    return NO_REFERENCE if math.isnan(reference) and not math.isnan(retained) else "no"


def curve_numbers(run: Run, table: pd.DataFrame | None = None) -> pd.DataFrame:
    """The consolidation curve of ``run`` (``table``: its :func:`~memlab.postrun.consolidation.
    curve`, computed when not given) as displayed, what :func:`consolidation_chart` draws: one
    row per configuration and session."""
    table = curve(run) if table is None else table
    if table.empty:
        return pd.DataFrame()
    return pd.DataFrame(
        {
            "configuration": [run.label(str(lane)) for lane in table["lane_id"]],
            "session": table["session_index"],
            "day": table["days"].map(lambda d: f"{d:.1f}"),
            "memory tokens / owner": [
                f"{v:.0f} {shown_bounds('memory_tokens', lo, hi)}"
                for v, lo, hi in table[
                    ["memory_tokens", "memory_tokens_lo", "memory_tokens_hi"]
                ].to_numpy()
            ],
            "asked again": table["reasked"].map(lambda v: f"{v:g}"),
            "retained": [
                _pct(v, lo, hi)
                for v, lo, hi in table[["retained", "retained_lo", "retained_hi"]].to_numpy()
            ],
            "size since answered": [
                "-" if math.isnan(v) else f"{v:.2f} {shown_bounds('size_ratio', lo, hi)}"
                for v, lo, hi in table[["size_ratio", "size_ratio_lo", "size_ratio_hi"]].to_numpy()
            ],
            "reference": [
                _pct(v, lo, hi)
                for v, lo, hi in table[["reference", "reference_lo", "reference_hi"]].to_numpy()
            ],
            "collapse": [
                _flag(bool(c), r, ref)
                for c, r, ref in table[["collapse", "retained", "reference"]].to_numpy()
            ],
        }
    )


def forgetting_numbers(run: Run, table: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per configuration: forgetting events, memories removed and gold facts lost by kind,
    summed over owners (``n/a`` where the memory does not forget); what
    :func:`forgetting_chart` draws. ``table``: the run's :func:`~memlab.postrun.consolidation.
    forgetting_table`, computed when not given."""
    table = forgetting_table(run) if table is None else table
    if table.empty:
        return pd.DataFrame()
    numbers = [c for c in table.columns if c.startswith(("forget_", "lost_"))]
    # Repeated samples of an owner are averaged first, then owners summed.
    per_owner = table.groupby(["lane_id", "user_id"], sort=False)[numbers].mean()
    rows = []
    for lane_id, counts in per_owner.groupby(level="lane_id", sort=False):
        row = {"configuration": run.label(str(lane_id)), "owners": len(counts)}
        applies = bool(counts.notna().all(axis=None))
        for kind in FORGETTING_KINDS:
            for column, title in (
                (f"forget_{kind}", f"{kind} events"),
                (f"forget_{kind}_memories", f"{kind} memories"),
                (f"lost_{kind}", f"gold lost ({kind})"),
            ):
                row[title] = f"{counts[column].sum():g}" if applies else NOT_APPLICABLE
        rows.append(row)
    return pd.DataFrame(rows)


def consolidation_chart(run: Run, table: pd.DataFrame | None = None) -> Figure:
    """Two panels over sessions, one line per configuration: the share of re-asked questions
    still answered correctly (with 95% intervals over owners; collapse marked with an x) and
    the memory's size in tokens per owner (``table``: the run's curve, computed when not
    given).

    Numbers: :func:`curve_numbers`.
    """
    fig = Figure(figsize=(8, 5.6), layout="constrained")
    table = curve(run) if table is None else table
    if table.empty:
        return empty_chart(fig, "no memory snapshots in this run")
    top, bottom = fig.subplots(2, 1, sharex=True)
    lanes = list(dict.fromkeys(table["lane_id"]))
    for lane_id, color in zip(lanes, palette(len(lanes)), strict=True):
        rows = table[table["lane_id"] == lane_id]
        label = run.label(str(lane_id))
        x = rows["session_index"].to_numpy(dtype=float)
        kept = rows["retained"].to_numpy(dtype=float)
        lo, hi = (
            rows["retained_lo"].to_numpy(dtype=float),
            rows["retained_hi"].to_numpy(dtype=float),
        )
        known = np.isfinite(kept)
        top.plot(x[known], kept[known], marker="o", markersize=4, color=color, label=label)
        bars = known & np.isfinite(lo) & np.isfinite(hi)
        spans = np.vstack([kept - lo, hi - kept])[:, bars]
        top.errorbar(x[bars], kept[bars], yerr=spans, fmt="none", ecolor=color, capsize=3)
        flagged = rows["collapse"].to_numpy(dtype=bool)
        top.plot(x[flagged], kept[flagged], "x", color="#000", markersize=10)
        bottom.plot(x, rows["memory_tokens"], marker="o", markersize=4, color=color, label=label)
    top.set_ylim(-0.05, 1.1)
    top.set_ylabel("still answered correctly")
    top.set_title("Consolidation curve: questions answered before, asked again (x: collapse)")
    bottom.set_ylabel("memory tokens / owner")
    bottom.set_xlabel("session (from 0)")
    bottom.set_ylim(bottom=0)
    bottom.xaxis.get_major_locator().set_params(integer=True)
    legend(top, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7)
    return fig


def forgetting_chart(run: Run, numbers: pd.DataFrame | None = None) -> Figure:
    """Per configuration, forgetting events by kind and the gold facts each kind lost (summed
    over owners); configurations whose memory does not forget are named as not applicable
    (``numbers``: the run's :func:`forgetting_numbers`, computed when not given).

    Numbers: :func:`forgetting_numbers`.
    """
    fig = Figure(figsize=(8, 1.6 + 0.7 * max(1, len(run.lanes))), layout="constrained")
    numbers = forgetting_numbers(run) if numbers is None else numbers
    if numbers.empty:
        return empty_chart(fig, "no replays in this run")
    applies = numbers[numbers["decayed events"] != NOT_APPLICABLE]
    if applies.empty:
        return empty_chart(fig, "no configuration of this run forgets (no forgetting records)")
    axes = fig.subplots(1, 2, sharey=True)
    y = np.arange(len(applies))
    for ax, what, title in (
        (axes[0], "{} events", "events"),
        (axes[1], "gold lost ({})", "gold facts lost"),
    ):
        left = np.zeros(len(applies))
        for kind, color in zip(FORGETTING_KINDS, palette(len(FORGETTING_KINDS)), strict=True):
            values = applies[what.format(kind)].astype(float).to_numpy()
            ax.barh(y, values, left=left, color=color, label=kind)
            left += values
        ax.set_xlabel(title)
    axes[0].set_yticks(y, list(applies["configuration"]))
    axes[0].invert_yaxis()
    legend(axes[1], loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7)
    skipped = len(numbers) - len(applies)
    suffix = f" ({skipped} configuration(s) do not forget: n/a)" if skipped else ""
    fig.suptitle("Forgetting by kind, summed over owners" + suffix, fontsize=10)
    return fig


MEMORY_TIME_CHARTS: tuple[str, ...] = ("Consolidation curve and memory size", "Forgetting by kind")
"""The titles of the section's charts, drawn for each run: :func:`consolidation_chart` and
:func:`forgetting_chart`."""


@dataclass(frozen=True)
class RunTables:
    """One run's numbers in the section, computed once for its tables and its charts."""

    run: Run
    curve: pd.DataFrame
    """:func:`~memlab.postrun.consolidation.curve` of the run."""
    forgetting: pd.DataFrame
    """:func:`forgetting_numbers` of the run."""

    def charts(self) -> list[tuple[str, Figure, pd.DataFrame]]:
        """Each chart of the run with its title and the numbers it draws."""
        return [
            (
                MEMORY_TIME_CHARTS[0],
                consolidation_chart(self.run, self.curve),
                curve_numbers(self.run, self.curve),
            ),
            (MEMORY_TIME_CHARTS[1], forgetting_chart(self.run, self.forgetting), self.forgetting),
        ]


@dataclass(frozen=True)
class MemoryTimeSection:
    """What the section shows (display strings, ready to render)."""

    runs: list[RunTables]
    curve: pd.DataFrame
    forgetting: pd.DataFrame
    notes: list[str] = field(default_factory=list)


def _named(run: Run, frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    out.insert(0, "run", run.name)
    return out


def _note(run: Run, answers: pd.DataFrame, manifest: dict[str, Any]) -> str:
    if not manifest:
        return f"{run.name}: no curve asked (memlab qa RUN --curve-every 1)"
    failed = "" if manifest.get("complete", True) else "; some calls failed"
    every = manifest.get("every", 1)
    unmeasured = (
        ""
        if manifest.get("reference")
        else f"; no reference measured: rerun memlab qa RUN --curve-every {every} (no collapse "
        "flagged)"
    )
    return (
        f"{run.name}: {len(answers)} answers asked again after every "
        f"{every} session(s), judge {manifest.get('judge')}{failed}{unmeasured}"
    )


def _may_forget(run: Run) -> bool:
    """Whether a lane of ``run`` replays a design that forgets (or one no longer registered):
    only then are its records read for the section."""
    for config in run.lanes.values():
        design = MEMORY_DESIGNS.get(getattr(config, "memory", DEFAULT_DESIGN))
        if design is None or design.forgets_in(config.settings()):
            return True
    return False


def memory_time_section(runs: Sequence[Run]) -> MemoryTimeSection | None:
    """The section for the runs that asked the curve or have a configuration that forgets;
    ``None`` when none has."""
    shown: list[RunTables] = []
    notes: list[str] = []
    for run in runs:
        answers, manifest = curve_answers(run)
        if not manifest and not _may_forget(run):
            continue
        try:
            forgets = forgetting_numbers(run)
            forgetful = not forgets.empty and (forgets["decayed events"] != NOT_APPLICABLE).any()
            if not manifest and not forgetful:
                continue
            shown.append(RunTables(run, curve(run), forgets))
        except QAError as exc:  # the dataset the run replayed is gone
            notes.append(f"{run.name}: not shown: {exc}")
            continue
        notes.append(_note(run, answers, manifest))
    if not shown:
        return None
    curves = [_named(t.run, curve_numbers(t.run, t.curve)) for t in shown]
    forgetting = [_named(t.run, t.forgetting) for t in shown]
    return MemoryTimeSection(shown, stacked(curves), stacked(forgetting), notes)


_TABLES = (
    ("Consolidation curve and memory size per session", "curve"),
    ("Forgetting by kind (summed over owners)", "forgetting"),
)


def _tables(section: MemoryTimeSection) -> list[tuple[str, pd.DataFrame]]:
    return [(title, getattr(section, name)) for title, name in _TABLES]


def memory_time_markdown(section: MemoryTimeSection | None) -> list[str]:
    """Markdown lines of the section (none without one)."""
    if section is None:
        return []
    lines = ["## Memory over time", "", md_escape(INTRO), ""]
    lines += [f"{md_escape(note)}  " for note in section.notes]
    lines += titled_tables_markdown(_tables(section))
    return [*lines, ""]


def memory_time_html(
    section: MemoryTimeSection | None, image: Callable[[Figure], str]
) -> list[str]:
    """HTML parts of the section with its charts, each chart's numbers folded under it
    (``image`` turns a Figure into a URI)."""
    if section is None:
        return []
    parts = [f"<p class='muted'>{escape(INTRO)}</p>"]
    parts += [f"<p class='muted'>{escape(note)}</p>" for note in section.notes]
    parts += titled_tables_html(_tables(section))
    for tables in section.runs:
        figures, empty = [], []
        for title, fig, numbers in tables.charts():
            reason = empty_reason(fig)
            if reason is not None:  # one line of text, as for every chart of the report
                empty.append(f"{title}: {reason}")
                continue
            figures.append(
                f"<figure><img alt='{escape(title)}' src='{image(fig)}'>"
                f"<details><summary>{escape(title)}: the numbers</summary>"
                f"{html_table(numbers)}</details></figure>"
            )
        parts.append(f"<h3>Charts: {escape(tables.run.name)}</h3>")
        if figures:
            parts.append(f"<div class='charts'>{''.join(figures)}</div>")
        if empty:
            parts.append(
                f"<p class='muted'>Not drawn (nothing to show): {escape('; '.join(empty))}.</p>"
            )
    return parts

"""The reports' statistics section: rates with intervals, paired comparisons, detectable effects.

Built once per report by :func:`statistics_section` and rendered by :func:`section_markdown`
and :func:`section_html`. Every configuration is compared with the baseline (the first lane of
the first run) on the owners both have; the primary metrics form the Holm family over every
configuration of the report, the other rates are exploratory (:mod:`memlab.scoring.comparison`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

import pandas as pd

from memlab.reporting.markdown import md_escape, md_table_head, md_table_row
from memlab.scoring.comparison import Lane, compare_lanes, comparison_text
from memlab.scoring.estimators import estimator
from memlab.scoring.metric_specs import MetricSpec, interval_specs, primary_metrics
from memlab.scoring.metrics import owner_counts
from memlab.scoring.stats import StatOptions, bootstrap, min_detectable_effect
from memlab.sweeps.run import Run

__all__ = [
    "StatisticsSection",
    "html_table",
    "md_table",
    "section_html",
    "section_markdown",
    "statistics_section",
]


@dataclass(frozen=True)
class StatisticsSection:
    """What the statistics section shows (display strings, ready to render)."""

    options: StatOptions
    intro: str
    intervals: pd.DataFrame
    """run, configuration, owners, then one ``value [lo, hi]`` column per rate title."""
    baseline: str
    comparisons: pd.DataFrame
    """:func:`memlab.scoring.comparison.comparison_text` of the comparisons with the baseline."""
    notes: list[str] = field(default_factory=list)


def _rates(runs: Sequence[Run]) -> list[MetricSpec]:
    present = set().union(*(set(run.summary.columns) for run in runs))
    return [spec for spec in interval_specs() if spec.column in present]


def _interval_rows(runs: Sequence[Run], rates: Sequence[MetricSpec]) -> pd.DataFrame:
    rows = []
    for run in runs:
        for _, row in run.summary.iterrows():
            cells = {
                "run": run.name,
                "configuration": str(row["label"]),
                "owners": _whole(row.get("owners")),
            }
            for spec in rates:
                value = row.get(spec.column, math.nan)
                lo, hi = row.get(f"{spec.column}_lo", math.nan), row.get(f"{spec.column}_hi")
                text = spec.fmt(value)
                if text != "-" and not pd.isna(lo) and not pd.isna(hi):
                    text += " " + spec.fmt_bounds(float(lo), float(hi))
                cells[spec.title] = text
            rows.append(cells)
    return pd.DataFrame(rows)


def _whole(value: object) -> str:
    if not isinstance(value, int | float) or math.isnan(value):
        return "-"
    return f"{value:g}"


def _shares_owners(base: Lane, cand: Lane) -> bool:
    def owners(lane: Lane) -> set[str]:
        sessions = lane.run.sessions
        if sessions.empty or "lane_id" not in sessions:
            return set()
        return set(sessions.loc[sessions["lane_id"] == lane.lane_id, "user_id"])

    return bool(owners(base) & owners(cand))


def _single_lane_mde(lane: Lane, rates: Sequence[MetricSpec], options: StatOptions) -> str:
    """MDE of a future comparison with one lane's spread, when the report compares nothing."""
    counts = owner_counts(lane.run.calls, lane.run.sessions, prices=lane.run.prices)
    if counts.empty:
        return ""
    mine = counts[counts.index.get_level_values("lane_id") == lane.lane_id]
    parts = []
    owners = len(mine)
    for spec in rates:
        if not all(c in mine.columns for c in spec.sources):
            continue
        found = bootstrap(estimator(spec, mine), options)
        # Two independent configurations with this spread: the delta's variance doubles.
        value = float(
            min_detectable_effect(
                [found.se * math.sqrt(2)], found.owners, alpha=options.alpha, power=options.power
            )[0]
        )
        if math.isinf(value) and found.owners == owners:
            return (
                f"With {owners} owner(s) no paired test can reach p <= {options.alpha:g}: "
                "compare on more owners."
            )
        if not math.isnan(value) and not math.isinf(value):
            parts.append(f"{spec.title} {spec.fmt_delta(value).lstrip('+')}")
    if not parts:
        return ""
    return (
        f"Minimum detectable effect with these {owners} owners (80% power, alpha "
        f"{options.alpha:g} for one metric, a second configuration with the same spread): "
        + ", ".join(parts)
        + ". Pairing on owners usually makes it smaller."
    )


def statistics_section(runs: Sequence[Run]) -> StatisticsSection:
    """Intervals of every lane's rates and each lane against the baseline lane."""
    options = runs[0].stats
    rates = _rates(runs)
    lanes = [Lane(run, lane_id) for run in runs for lane_id in run.lanes]
    base, others = lanes[0], lanes[1:]
    pairs = [(base, lane) for lane in others if _shares_owners(base, lane)]
    notes = [
        f"{lane.run.name}: {lane.label} shares no owners with the baseline: not compared."
        for lane in others
        if (base, lane) not in pairs
    ]
    names = [s.column for s in rates]
    primary = runs[0].primary
    table = None
    if pairs and names:
        table = compare_lanes(pairs, metrics=names, primary=primary, options=options)
    comparisons = pd.DataFrame()
    if table is not None:
        unused = table["verdict"] == "not applicable"
        notes += [
            f"{title}: undefined for every configuration compared (nothing to measure it on)."
            for title in dict.fromkeys(table.loc[unused, "title"])
            if (table.loc[table["title"] == title, "verdict"] == "not applicable").all()
        ]
        comparisons = comparison_text(table[~unused])
    if not others:
        notes.append(_single_lane_mde(base, rates, options))
    owners = [run.summary["owners"].min() for run in runs if not run.summary.empty]
    if owners and pd.notna(min(owners)) and float(min(owners)) < 2:
        notes.append("Intervals need at least 2 owners: runs with fewer show none.")
    tests = 0 if table is None else int(table["p_holm"].notna().sum())
    family = ", ".join(primary_metrics(primary))
    intro = (
        f"Intervals: {options.level:.0%}, bootstrap over owners ({options.resamples} resamples; "
        "owners are resampled with all their sessions; owners a rate cannot vary with, such as "
        "owners without gold facts for recall, are left out of its n). Comparisons: each "
        "configuration against the baseline on the owners both have; delta = configuration - "
        "baseline with a paired-bootstrap interval. Primary metrics "
        f"({family}) decide: a delta is significant when a paired sign-flip permutation test "
        "and the bootstrap interval both reject no difference, Holm's step-down over the "
        f"{tests} primary tests below keeping the family-wise error at {options.alpha:g}; each "
        "primary verdict, its interval and its MDE use the level of the Holm step that decided "
        "it (shown beside the interval), so a significant delta's interval excludes 0 and no "
        "other's does. Rows with the same counts on both sides are 'no change', not tests. "
        f"Other rates are exploratory, with {options.level:.0%} intervals. Precision verdicts "
        "use the macro average (the mean of owners' precision), so owners that store more "
        "facts do not weigh more; pooled (micro) precision is shown as exploratory. The "
        "minimum detectable effect (MDE) is the smallest true delta the procedure detects with "
        f"{options.power:.0%} power given the owners and the spread observed."
    )
    return StatisticsSection(
        options=options,
        intro=intro,
        intervals=_interval_rows(runs, rates),
        baseline=f"{base.run.name}: {base.label}",
        comparisons=comparisons,
        notes=[note for note in notes if note],
    )


# Columns whose text comes from run names and configuration values (data, not our numbers).
_DATA_COLUMNS = frozenset({"run", "configuration", "category", "judge", "judges"})


def md_table(frame: pd.DataFrame) -> list[str]:
    """A table of display strings as Markdown lines (run names and configurations escaped)."""
    lines = md_table_head([str(c) for c in frame.columns])
    for _, row in frame.iterrows():
        cells = [md_escape(row[c]) if c in _DATA_COLUMNS else str(row[c]) for c in frame.columns]
        lines.append(md_table_row(cells))
    return lines


def section_markdown(section: StatisticsSection) -> list[str]:
    """The section as Markdown lines."""
    lines = ["## Statistics", "", section.intro, "", "### Rates with intervals", ""]
    lines += md_table(section.intervals)
    if not section.comparisons.empty:
        lines += ["", f"### Against the baseline ({md_escape(section.baseline)})", ""]
        lines += md_table(section.comparisons)
    if section.notes:
        lines += ["", *(f"{md_escape(note)}  " for note in section.notes)]
    return [*lines, ""]


def html_table(frame: pd.DataFrame) -> str:
    """A table of display strings as HTML (every cell escaped)."""
    head = "".join(f"<th>{escape(str(c))}</th>" for c in frame.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(row[c]))}</td>" for c in frame.columns) + "</tr>"
        for _, row in frame.iterrows()
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def section_html(section: StatisticsSection) -> list[str]:
    """The section as HTML fragments (every text escaped)."""
    parts = [
        "<h2>Statistics</h2>",
        f"<p class='muted'>{escape(section.intro)}</p>",
        "<h3>Rates with intervals</h3>",
        html_table(section.intervals),
    ]
    if not section.comparisons.empty:
        parts.append(f"<h3>Against the baseline ({escape(section.baseline)})</h3>")
        parts.append(html_table(section.comparisons))
    parts += [f"<p class='muted'>{escape(note)}</p>" for note in section.notes]
    return parts
